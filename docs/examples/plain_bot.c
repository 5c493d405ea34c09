/*
 * A heads-up no-limit hold'em bot in C that speaks plain ACPC only: no range
 * queries. acpc-lbr measures it through the probe adapter (docs/lbr.md,
 * "Measuring a bot you cannot change"). Standard C library and POSIX sockets:
 *
 *     cc -O2 -std=c99 -o plain_bot docs/examples/plain_bot.c
 *     ./plain_bot random HOST PORT       or      ./plain_bot threshold HOST PORT
 *     acpc-lbr evaluate --opponent-cmd "./plain_bot random {host} {port}" --probe 100
 *
 * Two strategies, chosen by the first argument:
 *
 *   random     card-blind: facing a bet it folds 6% of the time; otherwise it
 *              calls or raises, equally likely (it calls when no raise is
 *              legal), and a raise goes to a total drawn uniformly from the
 *              legal range (the minimum raise-to ... all-in).
 *   threshold  card-aware and deterministic, by hand strength: "strong"
 *              (a pocket pair of nines or better, or a hole card pairing the
 *              board) raises the minimum when it may, else calls; "medium"
 *              (any other pocket pair, or a jack or better) calls; "weak"
 *              folds to a bet and checks otherwise.
 *
 * Its action depends only on the MATCHSTATE line it receives (and, for random,
 * on a generator seeded per process): what the probe adapter assumes. The
 * replies to all the complete lines of one read are sent in one write, so a
 * pipelined prober gets them in bulk.
 *
 * Game: holdem.nolimit.2p.reverse_blinds (blinds 100/50, stacks 20000).
 */
#define _POSIX_C_SOURCE 200112L
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define STACK 20000
#define BIG_BLIND 100
static const int FIRST_PLAYER[4] = {1, 0, 0, 0}; /* position to act first, per round */
static int sock = -1;
static int card_blind_random = 1;
static uint64_t rng_state;
static char out[1 << 20];
static size_t out_used = 0;

static void flush_out(void) {
    const char *data = out;
    while (out_used > 0) {
        ssize_t sent = send(sock, data, out_used, 0);
        if (sent <= 0) exit(1);
        data += sent;
        out_used -= (size_t)sent;
    }
}

/* splitmix64: a small, good generator; uniform() is in [0, 1). */
static uint64_t next_random(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double uniform(void) { return (double)(next_random() >> 11) * (1.0 / 9007199254740992.0); }

/* The betting so far, replayed: who acts, what they face, and the legal raise-to range. */
struct spot {
    int to_act;     /* position to act, or -1 */
    int facing;     /* that player faces a bet (folding is legal) */
    int raise_low;  /* smallest legal raise-to, or 0 when no raise is legal */
    int raise_high; /* largest legal raise-to (all-in) */
    int round;
};

static struct spot replay(const char *betting) {
    int spent[2] = {100, 50}, round = 0, count = 0, folded = 0, max_spent = 100;
    int min_raise_to = 2 * max_spent;
    char last = 0;
    for (const char *p = betting; *p && *p != ':'; ++p) {
        int actor = (FIRST_PLAYER[round] + count) % 2;
        if (*p == '/') {
            ++round, count = 0, last = 0;
            min_raise_to = max_spent + BIG_BLIND;
            continue;
        }
        if (*p == 'f') folded = 1;
        else if (*p == 'c') spent[actor] = max_spent;
        else if (*p == 'r') {
            int to = (int)strtol(p + 1, (char **)&p, 10);
            --p;
            if (2 * to - max_spent > min_raise_to) min_raise_to = 2 * to - max_spent;
            max_spent = spent[actor] = to;
        }
        last = *p == 'c' || *p == 'f' ? *p : 'r';
        ++count;
    }
    struct spot s = {-1, 0, 0, STACK, round};
    int round_over = count >= 2 && last == 'c';
    int all_in = spent[0] == STACK || spent[1] == STACK;
    if (folded || (round == 3 && round_over) || (all_in && round_over)) return s;
    if (spent[0] == STACK && spent[1] == STACK) return s;
    s.to_act = (FIRST_PLAYER[round] + count) % 2;
    s.facing = spent[1 - s.to_act] > spent[s.to_act];
    if (max_spent < STACK) s.raise_low = min_raise_to < STACK ? min_raise_to : STACK;
    return s;
}

static int card_index(const char *text) { /* "Ah" -> rank * 4 + suit */
    static const char RANKS[] = "23456789TJQKA", SUITS[] = "cdhs";
    const char *rank = strchr(RANKS, text[0]), *suit = strchr(SUITS, text[1]);
    return rank && suit && text[0] && text[1] ? (int)(rank - RANKS) * 4 + (int)(suit - SUITS) : -1;
}

/* 2 strong, 1 medium, 0 weak: hole cards, and the board (NUL-terminated, "/Ks7d2c/9h" or ""). */
static int strength(int c1, int c2, const char *board) {
    int r1 = c1 / 4, r2 = c2 / 4;
    for (const char *p = board; *p; ++p)
        if (*p != '/' && p[1]) {
            int b = card_index(p) / 4;
            if (b == r1 || b == r2) return 2;
            ++p;
        }
    if (r1 == r2) return r1 >= 7 ? 2 : 1; /* nines (rank 7) or better */
    return (r1 > r2 ? r1 : r2) >= 9 ? 1 : 0; /* a jack (rank 9) or better */
}

/* MATCHSTATE:<position>:<hand>:<betting>:<cards>: append "<line>:<action>\r\n" when to act. */
static void play(const char *line, size_t length) {
    int position = atoi(line + 11);
    const char *betting = strchr(strchr(line + 11, ':') + 1, ':') + 1;
    struct spot s = replay(betting);
    if (s.to_act != position) return;
    char action[16];
    if (card_blind_random) {
        if (s.facing && uniform() < 0.06) strcpy(action, "f");
        else if (s.raise_low && uniform() < 0.5)
            sprintf(action, "r%d", s.raise_low + (int)(uniform() * (s.raise_high - s.raise_low + 1)));
        else strcpy(action, "c");
    } else {
        const char *cards = strchr(betting, ':') + 1;
        const char *hole = position == 0 ? cards : strchr(cards, '|') + 1;
        const char *board = strchr(cards, '/');
        int level = strength(card_index(hole), card_index(hole + 2), board ? board : "");
        if (level == 2 && s.raise_low) sprintf(action, "r%d", s.raise_low);
        else if (level == 0 && s.facing) strcpy(action, "f");
        else strcpy(action, "c");
    }
    if (out_used + length + 20 > sizeof out) flush_out();
    memcpy(out + out_used, line, length);
    out_used += length;
    out_used += (size_t)sprintf(out + out_used, ":%s\r\n", action);
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "random") != 0 && strcmp(argv[1], "threshold") != 0)) {
        fprintf(stderr, "usage: %s random|threshold HOST PORT\n", argv[0]);
        return 2;
    }
    card_blind_random = strcmp(argv[1], "random") == 0;
    rng_state = (uint64_t)time(NULL) * 6364136223846793005ULL ^ (uint64_t)getpid() << 20;
    struct addrinfo hints = {0}, *address;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(argv[2], argv[3], &hints, &address) != 0) return 1;
    sock = socket(address->ai_family, address->ai_socktype, address->ai_protocol);
    if (sock < 0 || connect(sock, address->ai_addr, address->ai_addrlen) != 0) return 1;
    freeaddrinfo(address);
    const char *hello = "VERSION:2.0.0\r\n";
    send(sock, hello, strlen(hello), 0);
    static char buffer[1 << 16];
    size_t used = 0;
    for (;;) {
        ssize_t got = recv(sock, buffer + used, sizeof buffer - used - 1, 0);
        if (got <= 0) return 0; /* the dealer closed: the match is over */
        used += (size_t)got;
        char *start = buffer, *end;
        while ((end = memchr(start, '\n', used - (size_t)(start - buffer))) != NULL) {
            *end = '\0';
            if (end > start && end[-1] == '\r') end[-1] = '\0';
            if (strncmp(start, "MATCHSTATE:", 11) == 0) play(start, strlen(start));
            start = end + 1;
        }
        used -= (size_t)(start - buffer);
        memmove(buffer, start, used);
        if (used >= sizeof buffer - 1) return 1; /* a line longer than the buffer */
        flush_out(); /* every complete line read is answered: one write for all of them */
    }
}
