/* The per-hand loops of a deal in C: drawing the cards, their text, and the
 * showdown's ranks.
 *
 * protocol/deal.py (DealSource.deal), protocol/wire.py (_DealText) and
 * protocol/ranking.py (rank_hand) call these when the module was built, and
 * their own loops otherwise: those loops are the slow twins that
 * tests/protocol/test_handnative.py compares these with, hand by hand. Nothing here keeps state; the random stream stays
 * Python's MT19937 (random.Random.getrandbits), which hands us its words.
 *
 * deal_cards(words, deck, hole_cards, num_players, board_counts)
 *     words: the little-endian 32-bit outputs of the stream, as bytes, one per
 *     card; a draw with k cards left takes slot output % k and moves the last
 *     card into the hole (the reference dealer's dealCards).
 *     Returns (hole, board): a tuple of hole-card tuples per position and a
 *     tuple of board-card tuples per round, as protocol.deal.Deal holds them.
 *
 * cards_texts(groups)
 *     groups: a list or tuple of sequences of card indices (exact ints 0..51).
 *     Returns a list of str, one per group: its cards' texts run together
 *     ("AsKd"). Returns None when a card is not an exact int in 0..51: the
 *     caller's own path then says what is wrong, in its own error.
 *
 * deal_fields(hole, board)
 *     protocol/wire.py's _DealText fields of a deal: (hole texts, each
 *     position's own view of the hole field, the board field of each round), or
 *     None where cards_texts gives None, for more than 16 positions or rounds,
 *     or when a field would outgrow its buffer (the Python path then renders it).
 *
 * rank_cards(cards)
 *     cards: a list or tuple of distinct exact ints 0..51. Returns
 *     protocol.ranking.rank_hand's value of them, or -1 for anything else (a
 *     repeated card, one off the deck, another type): the general ranker then
 *     ranks it, or says what is wrong.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define DECK_MAX 52

static const char RANKS[] = "23456789TJQKA";
static const char SUITS[] = "cdhs";

/* An ASCII str of ``length`` bytes: made directly (PyUnicode_FromStringAndSize decodes UTF-8). */
static PyObject *
ascii_text(const char *bytes, Py_ssize_t length)
{
    PyObject *text = PyUnicode_New(length, 127);
    if (text != NULL && length > 0)
        memcpy(PyUnicode_DATA(text), bytes, (size_t)length);
    return text;
}

/* The bytes of an ASCII str made by ascii_text. */
static const char *
ascii_of(PyObject *text, Py_ssize_t *size)
{
    *size = PyUnicode_GET_LENGTH(text);
    return (const char *)PyUnicode_DATA(text);
}

/* The card index objects 0..51, made once: a deal's tuples hold these. */
static PyObject *card_objects[DECK_MAX];

/* A tuple of the card objects of ``count`` card indices. */
static PyObject *
card_group(const long *cards, Py_ssize_t count)
{
    PyObject *group = PyTuple_New(count);
    if (group == NULL)
        return NULL;
    for (Py_ssize_t c = 0; c < count; c++) {
        PyObject *card = card_objects[cards[c]];
        Py_INCREF(card);
        PyTuple_SET_ITEM(group, c, card);
    }
    return group;
}

static PyObject *
deal_cards(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer words;
    long deck[DECK_MAX];
    Py_ssize_t deck_size, hole_cards, num_players, rounds, total, needed;
    Py_ssize_t counts[DECK_MAX];
    PyObject *deck_obj, *counts_obj, *hole = NULL, *board = NULL, *result = NULL;
    long cards[DECK_MAX];
    (void)module;

    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "deal_cards takes 5 arguments");
        return NULL;
    }
    deck_obj = args[1];
    counts_obj = args[4];
    if (!PyTuple_Check(deck_obj) || !PyTuple_Check(counts_obj)) {
        PyErr_SetString(PyExc_TypeError, "deal_cards: deck and board_counts are tuples");
        return NULL;
    }
    hole_cards = PyLong_AsSsize_t(args[2]);
    num_players = PyLong_AsSsize_t(args[3]);
    if ((hole_cards == -1 || num_players == -1) && PyErr_Occurred())
        return NULL;
    deck_size = PyTuple_GET_SIZE(deck_obj);
    rounds = PyTuple_GET_SIZE(counts_obj);
    if (hole_cards < 0 || num_players < 0 || deck_size > DECK_MAX) {
        PyErr_SetString(PyExc_ValueError, "deal_cards: a negative count or a deck over 52 cards");
        return NULL;
    }
    /* Every count at most 52 before any product or sum: nothing here can overflow. */
    if (hole_cards > DECK_MAX || num_players > DECK_MAX || rounds > DECK_MAX
            || hole_cards * num_players > DECK_MAX) {
        PyErr_SetString(PyExc_ValueError, "deal_cards: more cards than the deck holds");
        return NULL;
    }
    total = hole_cards * num_players;
    for (Py_ssize_t r = 0; r < rounds; r++) {
        Py_ssize_t count = PyLong_AsSsize_t(PyTuple_GET_ITEM(counts_obj, r));
        if (count == -1 && PyErr_Occurred())
            return NULL;
        if (count < 0) {
            PyErr_SetString(PyExc_ValueError, "deal_cards: a negative board count");
            return NULL;
        }
        if (count > DECK_MAX - total) {
            PyErr_SetString(PyExc_ValueError, "deal_cards: more cards than the deck holds");
            return NULL;
        }
        counts[r] = count;
        total += count;
    }
    if (total > deck_size) {
        PyErr_SetString(PyExc_ValueError, "deal_cards: more cards than the deck holds");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < deck_size; i++) {
        long card = PyLong_AsLong(PyTuple_GET_ITEM(deck_obj, i));
        if (card == -1 && PyErr_Occurred())
            return NULL;
        if (card < 0 || card >= DECK_MAX) {
            PyErr_SetString(PyExc_ValueError, "deal_cards: a deck card off 0..51");
            return NULL;
        }
        deck[i] = card;
    }
    if (PyObject_GetBuffer(args[0], &words, PyBUF_SIMPLE) < 0)
        return NULL;
    needed = 4 * total;
    if (words.len != needed) {
        PyErr_Format(PyExc_ValueError, "deal_cards: %zd bytes of words for %zd cards", words.len, total);
        PyBuffer_Release(&words);
        return NULL;
    }
    {
        const unsigned char *bytes = (const unsigned char *)words.buf;
        Py_ssize_t left = deck_size;
        for (Py_ssize_t i = 0; i < total; i++) {
            const unsigned char *w = bytes + 4 * i;
            uint32_t output = (uint32_t)w[0] | ((uint32_t)w[1] << 8) | ((uint32_t)w[2] << 16)
                              | ((uint32_t)w[3] << 24);
            Py_ssize_t slot = (Py_ssize_t)(output % (uint32_t)left);
            cards[i] = deck[slot];
            left -= 1;
            deck[slot] = deck[left];
        }
    }
    PyBuffer_Release(&words);

    hole = PyTuple_New(num_players);
    board = PyTuple_New(rounds);
    if (hole == NULL || board == NULL)
        goto fail;
    {
        Py_ssize_t next = 0;
        for (Py_ssize_t p = 0; p < num_players; p++, next += hole_cards) {
            PyObject *group = card_group(cards + next, hole_cards);
            if (group == NULL)
                goto fail;
            PyTuple_SET_ITEM(hole, p, group);
        }
        for (Py_ssize_t r = 0; r < rounds; next += counts[r], r++) {
            PyObject *group = card_group(cards + next, counts[r]);
            if (group == NULL)
                goto fail;
            PyTuple_SET_ITEM(board, r, group);
        }
    }
    result = PyTuple_Pack(2, hole, board);
fail:
    Py_XDECREF(hole);
    Py_XDECREF(board);
    return result;
}

static PyObject *
cards_texts(PyObject *module, PyObject *groups)
{
    PyObject *seq, *out;
    Py_ssize_t n;
    (void)module;

    /* A tuple of its own: turning a group into a sequence may run Python code (its
     * __iter__), which must not change what is iterated here. */
    if (!PyList_Check(groups) && !PyTuple_Check(groups)) {
        PyErr_SetString(PyExc_TypeError, "cards_texts takes a list or tuple of card groups");
        return NULL;
    }
    seq = PySequence_Tuple(groups);
    if (seq == NULL)
        return NULL;
    n = PyTuple_GET_SIZE(seq);
    out = PyList_New(n);
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    for (Py_ssize_t g = 0; g < n; g++) {
        PyObject *cards = PySequence_Fast(PyTuple_GET_ITEM(seq, g), "a card group is a sequence");
        PyObject *text;
        Py_ssize_t count;
        char buffer[2 * DECK_MAX];
        if (cards == NULL)
            goto fail;
        count = PySequence_Fast_GET_SIZE(cards);
        if (count > DECK_MAX) {
            Py_DECREF(cards);
            goto off_deck;
        }
        for (Py_ssize_t c = 0; c < count; c++) {
            PyObject *card = PySequence_Fast_GET_ITEM(cards, c);
            long index;
            int overflow;
            if (!PyLong_CheckExact(card)) {  /* bool, numpy ints, ...: the caller's path */
                Py_DECREF(cards);
                goto off_deck;
            }
            index = PyLong_AsLongAndOverflow(card, &overflow);
            if (overflow || index < 0 || index >= DECK_MAX) {
                Py_DECREF(cards);
                goto off_deck;
            }
            buffer[2 * c] = RANKS[index / 4];
            buffer[2 * c + 1] = SUITS[index % 4];
        }
        Py_DECREF(cards);
        text = ascii_text(buffer, 2 * count);
        if (text == NULL)
            goto fail;
        PyList_SET_ITEM(out, g, text);
    }
    Py_DECREF(seq);
    return out;
off_deck:
    Py_DECREF(seq);
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    Py_DECREF(seq);
    Py_DECREF(out);
    return NULL;
}

/* deal_fields(hole, board): protocol/wire.py's _DealText fields of a deal, or None where
 * cards_texts gives None (or for more than MAX_GROUPS positions or rounds):
 * (hole_texts, own, boards), lists of str: each position's hole cards; the
 * hole field as position p sees it before a showdown (its own cards, the others'
 * empty, joined by '|'); the board field of rounds 0..r ('flop/turn/...'). */
#define MAX_GROUPS 16

static PyObject *
deal_fields(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *hole = NULL, *board = NULL, *own = NULL, *boards = NULL, *result = NULL;
    Py_ssize_t players, rounds;
    char buffer[2 * DECK_MAX + 2 * MAX_GROUPS];

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "deal_fields takes 2 arguments");
        return NULL;
    }
    hole = cards_texts(module, args[0]);
    if (hole == NULL || hole == Py_None)
        return hole;
    board = cards_texts(module, args[1]);
    if (board == NULL || board == Py_None) {
        Py_DECREF(hole);
        return board;
    }
    players = PyList_GET_SIZE(hole);
    rounds = PyList_GET_SIZE(board);
    if (players > MAX_GROUPS || rounds > MAX_GROUPS) {
        Py_DECREF(hole);
        Py_DECREF(board);
        Py_RETURN_NONE;
    }
    own = PyList_New(players);
    boards = PyList_New(rounds);
    if (own == NULL || boards == NULL)
        goto done;
    for (Py_ssize_t p = 0; p < players; p++) {
        Py_ssize_t length = 0, size;
        const char *text;
        PyObject *field;
        for (Py_ssize_t q = 0; q < players; q++) {
            if (q > 0)
                buffer[length++] = '|';
            if (q == p) {
                text = ascii_of(PyList_GET_ITEM(hole, q), &size);
                if (text == NULL)
                    goto done;
                if (length + size + players > (Py_ssize_t)sizeof(buffer)) {
                    Py_INCREF(Py_None);
                    result = Py_None;
                    goto done;
                }
                memcpy(buffer + length, text, (size_t)size);
                length += size;
            }
        }
        field = ascii_text(buffer, length);
        if (field == NULL)
            goto done;
        PyList_SET_ITEM(own, p, field);
    }
    {
        Py_ssize_t length = 0, size;
        for (Py_ssize_t r = 0; r < rounds; r++) {
            const char *text = ascii_of(PyList_GET_ITEM(board, r), &size);
            PyObject *field;
            if (text == NULL)
                goto done;
            if (length + 1 + size > (Py_ssize_t)sizeof(buffer)) {  /* odd input: Python's path */
                Py_INCREF(Py_None);
                result = Py_None;
                goto done;
            }
            if (r > 0)
                buffer[length++] = '/';
            memcpy(buffer + length, text, (size_t)size);
            length += size;
            field = ascii_text(buffer, length);
            if (field == NULL)
                goto done;
            PyList_SET_ITEM(boards, r, field);
        }
    }
    result = PyTuple_Pack(3, hole, own, boards);
done:
    Py_XDECREF(hole);
    Py_XDECREF(board);
    Py_XDECREF(own);
    Py_XDECREF(boards);
    return result;
}

/* -- showdown ranks ------------------------------------------------------
 * protocol/ranking.py's _rank_distinct on the four suits' 13-bit rank masks:
 * the same values (category, then up to five kickers, base 14). */

/* Plain loops, not compiler builtins (MSVC has neither): the masks have 13 bits. */
static int highest(unsigned mask)
{
    int rank = 12;
    while (!(mask >> rank & 1u))
        rank--;
    return rank;
}

static int count_ranks(unsigned mask)
{
    int count = 0;
    for (; mask; mask &= mask - 1)
        count++;
    return count;
}

static long push_kickers(long value, unsigned mask, int count, int *added)
{
    *added = 0;
    while (*added < count && mask) {
        int rank = highest(mask);
        value = value * 14 + rank + 1;
        mask ^= 1u << rank;
        (*added)++;
    }
    return value;
}

static long encode(int category, int first, unsigned rest, int count)
{
    long value = category;
    int digits = 0, added;
    if (first >= 0) {
        value = (long)category * 14 + first + 1;
        digits = 1;
    }
    value = push_kickers(value, rest, count, &added);
    for (int i = digits + added; i < 5; i++)
        value *= 14;
    return value;
}

static int straight_top(unsigned mask)
{
    const unsigned wheel = (1u << 12) | 0xFu;
    unsigned runs = mask & (mask << 1) & (mask << 2) & (mask << 3) & (mask << 4) & 0x1FFFu;
    if (runs)
        return highest(runs);
    return (mask & wheel) == wheel ? 3 : -1;
}

static long rank_masks(const unsigned suits[4])
{
    unsigned clubs = suits[0], diamonds = suits[1], hearts = suits[2], spades = suits[3];
    long flush = -1;
    for (int s = 0; s < 4; s++) {
        if (count_ranks(suits[s]) >= 5) {
            int top = straight_top(suits[s]);
            if (top >= 0)
                return encode(8, top, 0, 0);
            if (flush < 0)
                flush = suits[s];
        }
    }
    unsigned present = clubs | diamonds | hearts | spades;
    unsigned two_up = (clubs & diamonds) | (clubs & hearts) | (clubs & spades) | (diamonds & hearts)
                      | (diamonds & spades) | (hearts & spades);
    unsigned three_up = (clubs & diamonds & hearts) | (clubs & diamonds & spades)
                        | (clubs & hearts & spades) | (diamonds & hearts & spades);
    unsigned quads = clubs & diamonds & hearts & spades;
    unsigned trips = three_up & ~quads;
    unsigned pairs = two_up & ~three_up;
    if (quads) {
        int quad = highest(quads);
        return encode(7, quad, present & ~(1u << quad), 1);
    }
    if (trips && ((trips & (trips - 1)) || pairs)) {
        int trip = highest(trips);
        return encode(6, trip, (trips & ~(1u << trip)) | pairs, 1);
    }
    if (flush >= 0)
        return encode(5, -1, (unsigned)flush, 5);
    int top = straight_top(present);
    if (top >= 0)
        return encode(4, top, 0, 0);
    if (trips) {
        int trip = highest(trips);
        return encode(3, trip, present & ~(1u << trip), 2);
    }
    if (pairs & (pairs - 1)) {
        int high = highest(pairs);
        int low = highest(pairs & ~(1u << high));
        int added;
        long value = (2L * 14 + high + 1) * 14 + low + 1;
        value = push_kickers(value, present & ~(1u << high) & ~(1u << low), 1, &added);
        for (int i = 2 + added; i < 5; i++)
            value *= 14;
        return value;
    }
    if (pairs) {
        int pair = highest(pairs);
        return encode(1, pair, present & ~(1u << pair), 3);
    }
    return encode(0, -1, present, 5);
}

/* rank_cards(cards): the rank of distinct cards 0..51 given as a list or tuple of exact
 * ints, or -1 for anything else (a repeated card, one off the deck, another type): the
 * caller's general ranker then ranks it (or says what is wrong). */
static PyObject *
rank_cards(PyObject *module, PyObject *cards)
{
    unsigned suits[4] = {0, 0, 0, 0};
    uint64_t seen = 0;
    Py_ssize_t n;
    PyObject **items;
    (void)module;

    if (PyList_CheckExact(cards)) {
        n = PyList_GET_SIZE(cards);
        items = ((PyListObject *)cards)->ob_item;
    } else if (PyTuple_CheckExact(cards)) {
        n = PyTuple_GET_SIZE(cards);
        items = ((PyTupleObject *)cards)->ob_item;
    } else {
        return PyLong_FromLong(-1);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int overflow;
        long card;
        if (!PyLong_CheckExact(items[i]))
            return PyLong_FromLong(-1);
        card = PyLong_AsLongAndOverflow(items[i], &overflow);
        if (overflow || card < 0 || card >= DECK_MAX || (seen >> card & 1))
            return PyLong_FromLong(-1);
        seen |= (uint64_t)1 << card;
        suits[card & 3] |= 1u << (card >> 2);
    }
    return PyLong_FromLong(rank_masks(suits));
}

static PyMethodDef methods[] = {
    {"deal_cards", (PyCFunction)(void (*)(void))deal_cards, METH_FASTCALL,
     "deal_cards(words, deck, hole_cards, num_players, board_counts) -> (hole, board)"},
    {"rank_cards", rank_cards, METH_O,
     "rank_cards(cards) -> protocol.ranking.rank_hand's value of distinct cards 0..51, or -1"},
    {"deal_fields", (PyCFunction)(void (*)(void))deal_fields, METH_FASTCALL,
     "deal_fields(hole, board) -> (hole_texts, own, boards) of protocol.wire._DealText, or None"},
    {"cards_texts", cards_texts, METH_O,
     "cards_texts(groups) -> list of each group's card texts run together, or None off the deck"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "protocol._handnative",
    "The per-hand loops of a deal in C (protocol/_handnative.c says what and why).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__handnative(void)
{
    for (int i = 0; i < DECK_MAX; i++) {
        if (card_objects[i] == NULL) {
            card_objects[i] = PyLong_FromLong(i);
            if (card_objects[i] == NULL)
                return NULL;
        }
    }
    return PyModule_Create(&module_def);
}
