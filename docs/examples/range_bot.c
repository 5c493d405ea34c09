/*
 * A heads-up no-limit hold'em bot in C that plays plain ACPC and answers
 * range queries in version 2 of the extension (docs/range-query.md).
 * Standard C library and POSIX sockets only:
 *
 *     cc -O2 -std=c99 -o range_bot docs/examples/range_bot.c
 *     ./range_bot HOST PORT        (e.g. acpc-lbr evaluate --opponent-cmd "./range_bot {host} {port}")
 *
 * Strategy (it never raises): facing a bet it folds with a probability that
 * depends on its higher hole card -- 3/4 below an 8, 1/4 below a jack, never
 * otherwise -- and calls the rest; not facing a bet it checks. A query is
 * answered from the same table for all 1326 hands: "F" rows (base64 of
 * little-endian float32) for fold and call, "K0" for any raise. Play draws
 * from rand(); answers never do, so a query cannot change the play.
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
#include <unistd.h>

#define NUM_HANDS 1326
#define STACK 20000
static const int FIRST_PLAYER[4] = {1, 0, 0, 0}; /* position to act first, per round */
static int sock = -1;
static int answer_version = 1; /* until the dealer says "# range-query-version 2" */

static void send_all(const char *data, size_t length) {
    while (length > 0) {
        ssize_t sent = send(sock, data, length, 0);
        if (sent <= 0) exit(1);
        data += sent;
        length -= (size_t)sent;
    }
}

/* Probability of folding, facing a bet, holding cards c1 < c2 (index = rank*4 + suit). */
static double fold_probability(int c1, int c2) {
    int high = (c1 > c2 ? c1 : c2) / 4; /* 0 = deuce ... 12 = ace */
    return high < 6 ? 0.75 : high < 9 ? 0.25 : 0.0;
}

/* Replay a betting string ("r300c/cr900") for heads-up no-limit. Sets *to_act
 * (position to act, or -1 if nobody acts) and *facing (that player faces a bet). */
static void replay(const char *betting, int *to_act, int *facing) {
    int spent[2] = {100, 50}, round = 0, count = 0, folded = 0;
    char last = 0;
    for (const char *p = betting; *p && *p != ':'; ++p) {
        int actor = (FIRST_PLAYER[round] + count) % 2;
        if (*p == '/') { ++round; count = 0; last = 0; continue; }
        if (*p == 'f') folded = 1;
        else if (*p == 'c') spent[actor] = spent[0] > spent[1] ? spent[0] : spent[1];
        else if (*p == 'r') spent[actor] = (int)strtol(p + 1, (char **)&p, 10), --p;
        last = *p == 'c' || *p == 'f' ? *p : 'r';
        ++count;
    }
    int round_over = count >= 2 && last == 'c';
    int all_in = spent[0] == STACK && spent[1] == STACK;
    *to_act = folded || all_in || (round == 3 && round_over) ? -1 : (FIRST_PLAYER[round] + count) % 2;
    *facing = *to_act >= 0 && spent[1 - *to_act] > spent[*to_act];
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Append "F" + base64 of NUM_HANDS little-endian float32 values to out; returns the new end. */
static char *append_float32_row(char *out, const float *row) {
    unsigned char bytes[NUM_HANDS * 4];
    for (int h = 0; h < NUM_HANDS; ++h) {
        uint32_t bits;
        memcpy(&bits, &row[h], 4);
        for (int b = 0; b < 4; ++b) bytes[4 * h + b] = (unsigned char)(bits >> (8 * b));
    }
    *out++ = 'F';
    for (size_t i = 0; i < sizeof bytes; i += 3) { /* 5304 bytes: a multiple of 3, no padding */
        uint32_t v = (uint32_t)bytes[i] << 16 | (uint32_t)bytes[i + 1] << 8 | bytes[i + 2];
        for (int k = 3; k >= 0; --k) *out++ = B64[(v >> (6 * k)) & 63];
    }
    return out;
}

/* QUERY:<qid>:<position>:<hand>:<betting>:<cards>:<actions> -> RANGE (v2) or RANGEERROR. */
static void answer_query(char *line) {
    char *field[7];
    int n = 0;
    for (char *p = line; n < 7 && p; ++n) {
        field[n] = p;
        p = strchr(p, ':');
        if (p && n < 6) *p++ = '\0';
    }
    static char reply[4 * 7200 + 256];
    if (n < 7) return;
    int position = atoi(field[2]), to_act, facing;
    replay(field[4], &to_act, &facing);
    if (to_act != position || answer_version != 2) {
        snprintf(reply, sizeof reply, "RANGEERROR:%s:%s\r\n", field[1],
                 to_act != position ? "that position is not to act there" : "version 2 only");
        send_all(reply, strlen(reply));
        return;
    }
    static float fold[NUM_HANDS], call[NUM_HANDS];
    for (int c2 = 1, h = 0; c2 < 52; ++c2)
        for (int c1 = 0; c1 < c2; ++c1, ++h) {
            fold[h] = facing ? (float)fold_probability(c1, c2) : 0.0f;
            call[h] = 1.0f - fold[h];
        }
    char *out = reply + sprintf(reply, "RANGE:%s:2:", field[1]);
    for (char *action = strtok(field[6], ","); action; action = strtok(NULL, ",")) {
        if (out - reply > (long)sizeof reply - 7300) break;
        out += sprintf(out, "%s%s=", out[-1] == ':' ? "" : ";", action);
        if (action[0] == 'f') out = append_float32_row(out, fold);
        else if (action[0] == 'c') out = append_float32_row(out, call);
        else out += sprintf(out, "K0");
    }
    out += sprintf(out, "\r\n");
    send_all(reply, (size_t)(out - reply));
}

/* MATCHSTATE:<position>:<hand>:<betting>:<cards>: reply "<line>:<action>" when to act. */
static void play(const char *line) {
    int position = atoi(line + 11), to_act, facing;
    const char *betting = strchr(strchr(line + 11, ':') + 1, ':') + 1;
    replay(betting, &to_act, &facing);
    if (to_act != position) return;
    const char *cards = strchr(betting, ':') + 1;
    const char *hole = position == 0 ? cards : strchr(cards, '|') + 1;
    static const char RANKS[] = "23456789TJQKA", SUITS[] = "cdhs";
    int c[2];
    for (int i = 0; i < 2; ++i)
        c[i] = (int)(strchr(RANKS, hole[2 * i]) - RANKS) * 4 + (int)(strchr(SUITS, hole[2 * i + 1]) - SUITS);
    int fold = facing && rand() < fold_probability(c[0], c[1]) * ((double)RAND_MAX + 1.0);
    char reply[4200];
    snprintf(reply, sizeof reply, "%s:%c\r\n", line, fold ? 'f' : 'c');
    send_all(reply, strlen(reply));
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s HOST PORT\n", argv[0]);
        return 2;
    }
    struct addrinfo hints = {0}, *address;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(argv[1], argv[2], &hints, &address) != 0) return 1;
    sock = socket(address->ai_family, address->ai_socktype, address->ai_protocol);
    if (sock < 0 || connect(sock, address->ai_addr, address->ai_addrlen) != 0) return 1;
    freeaddrinfo(address);
    srand(1);
    const char *hello = "VERSION:2.0.0\r\n# range-query 2\r\n";
    send_all(hello, strlen(hello));
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
            if (strncmp(start, "MATCHSTATE:", 11) == 0) play(start);
            else if (strncmp(start, "QUERY:", 6) == 0) answer_query(start);
            else if (strncmp(start, "# range-query-version ", 22) == 0) answer_version = atoi(start + 22);
            start = end + 1;
        }
        used -= (size_t)(start - buffer);
        memmove(buffer, start, used);
        if (used >= sizeof buffer - 1) return 1; /* a line longer than the buffer */
    }
}
