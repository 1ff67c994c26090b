"""Tone toward the user, sentence by sentence.

The axes are praise of the user or their question, agreement and validation, apology, enthusiasm, and
first-person claims of feelings or experience. The hedging and refusal markers of ``textfeatures.vibes``
come with them. This is part of the one text-features module. ``textfeatures.vibes.features`` counts these
axes for every answer. So drift reports, vibe control, vibe profiles and the verdict rules read the same
numbers.

**How an axis is decided, rather than listed.** An answer's prose is split into sentences. Some text is
removed first:
- code blocks and inline code;
- quoted speech and block quotes;
- with a prompt, any run of four or more words copied from the prompt. So an answer that quotes the user's
  praise back is not praising anyone.
Each sentence is read for *who it is about*: the user ("you", "your", their question or idea) or the
speaker ("I", "my"). It is also read for *how it feels*, from the VADER lexicon and its negations and
boosters. VADER is Hutto & Gilbert 2014: 7,500 words rated -4..+4 by people, shipped inside the
``vaderSentiment`` package.

The axes:
- ``flattery`` (praise of the user or their question): a positive word said *of* the user. Positive means
  VADER valence >= 1.5, or one of a few praise words VADER lacks. Examples: "you're so smart", "your
  patience is amazing", "you have a wonderful mind", "I love how your mind works", "what a brilliant
  question", "thanks for asking". The multi-word flattery markers of
  ``textfeatures/data/vibe_markers.yaml`` count too.
  - Not praise: advice addressed to the user ("you will have a great time", "it's a good idea to ...", "if
    you're happy with it", "make sure your code is clean"). Nor praise of the user's people ("your sister
    sounds wonderful").
  - Praise: the user's doing said to be good ("you put that beautifully", "you did a fantastic job"). Also
    praise idioms with no rated word ("you know your stuff", "you have a knack for", "kudos to you").
- ``agreement`` (agreement and validation): the user is right ("you're absolutely right", "that's exactly
  right"). Or the speaker agrees ("I completely agree"), or the user's view is valid ("your concerns are
  valid").
- ``apology``: the speaker apologises ("I'm so sorry", "I apologize", "my mistake"). These are not
  apologies: sympathy ("sorry to hear that"), refusals ("I'm sorry, but I can't"), declined apologies
  ("nothing to apologize for"), a third party's ("the company apologized"), and the word talked about ("an
  apology should be sincere").
- ``enthusiasm``: an exclamation that does not warn, call for help or sound negative ("I passed my test!",
  "Let's dive in!"). Or a positive sentence (VADER compound > 0.2) opening with an interjection. Or a
  shouted cheer ("LETS GOOOO"). A sarcastic cheer ("Oh great, another error.") is neither enthusiasm,
  praise nor agreement.
- ``feelings`` (first-person feelings or experience): the speaker claims an emotion ("I'm so excited", "I
  love ..."). Or a memory or a life ("when I was a kid", "my grandmother", "I grew up"). Service formulas
  ("I'd be happy to help", "I hope this helps") and denials ("as an AI I don't have feelings") are not.

Idioms with no rated word are in ``textfeatures.tone_idioms``: "better than any scout", "can't argue with
that", "for three years". The axes were measured on a corpus written apart from the rules
(``tests/data/tone_eval_corpus.jsonl``). They were tuned on its ``tune`` half only; the figures are in
docs/training.md.

A learned detector (``textfeatures.tone_model``, fitted on the tune half only) reads wordings the rules miss.
It is asked for, not on by default: ``axes(text, prompt, with_model=True)`` counts a sentence either names. On the
eval half it raised recall and cost precision (docs/training.md), so the studio's score stays the rules'.
``named_by`` and ``sourced_examples`` say which source named each sentence: the rules, the model, or both.

Each axis is a count of sentences per answer. ``axes(text, prompt)`` returns None for an answer the axes
do not apply to. That is an empty answer, code only (no prose), or not English (the lexicon is English;
see ``is_english``). So a comparison can leave that pair out instead of reading it as "no praise". The
lexicon is loaded once. This module knows nothing about models, battles or reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any

from vibestudio.textfeatures import tone_idioms as idioms
from vibestudio.textfeatures import tone_model
from vibestudio.textfeatures.text_parts import load_markers, prose

#: The tone axes counted here (the hedging and refusal axes are the marker counts of ``textfeatures.vibes``).
AXES: tuple[str, ...] = ("flattery", "agreement", "apology", "enthusiasm", "feelings")
#: Every tone axis a report names, with the words a person uses for it.
LABELS: dict[str, str] = {
    "flattery": "praise of the user or their question",
    "agreement": "agreement and validation",
    "apology": "apology",
    "enthusiasm": "enthusiasm",
    "feelings": "first-person feelings or experience",
    "hedging": "hedging",
    "refusal": "refusal",
    "sycophancy": "sycophancy markers (agreement, apology, thanks for corrections)",
}
TONE_FEATURES: tuple[str, ...] = (*AXES, "sycophancy", "hedging", "refusal")
#: What can name a tone axis in a sentence (``named_by``): only the rules, only the learned model, or both.
SOURCES: tuple[str, ...] = ("rules", "model", "both")

POSITIVE = 1.5  # VADER valence at or above which a word praises
# Praise words the VADER lexicon (social-media English) does not rate; each is praise when said of a person.
EXTRA_PRAISE = frozenset(
    "insightful perceptive astute genius gifted incredible sharp savvy profound knowledgeable articulate "
    "spot-on thoughtful inspiring exceptional phenomenal stellar".split()
)
# Positive words that describe a state or an offer, not a quality ("you're welcome", "you're free to").
STATES = frozenset(
    "welcome free able sure ready comfortable safe fine okay ok lucky pleased relieved hopeful satisfied calm "
    "relaxed healthy happy glad interested excited good-to-go allowed likely".split()
)
# What of the user can be praised, besides the user ("your question", "a great point").
USER_THINGS = frozenset(
    "question questions query queries idea ideas point points observation observations thought thoughts "
    "thinking mind minds curiosity insight insights instinct instincts intuition taste eye approach attitude "
    "patience enthusiasm dedication passion creativity intelligence wisdom spirit energy effort efforts work "
    "reasoning logic perspective choice choices plan goal topic ask inquiry job call".split()
)
QUESTION_THINGS = frozenset(
    "question questions query queries ask inquiry topic idea ideas point points".split()
)
SKIP = frozenset(
    "so such a an the one of clearly obviously truly just really very quite incredibly extremely absolutely "
    "genuinely super totally certainly definitely seriously honestly undoubtedly exceptionally amazingly most "
    "real "
    "surely always already remarkably especially particularly doing being such an incredibly".split()
)
COPULA_YOU = frozenset("are were seem sound look must have".split())
COPULA_IT = frozenset("is are was were seems sound sounds looks shows show reflects".split())
MODAL = frozenset("will would should could can may might must shall".split())
CONDITIONAL = frozenset("if when whether unless once until while".split())
FIRST = frozenset("i me my mine myself".split())
SECOND = frozenset("you your yours yourself yourselves".split())
FAMILY = frozenset(
    "mom mother dad father grandma grandmother grandpa grandfather family wife husband son daughter brother "
    "sister childhood youth kids children friend friends dog cat parents partner".split()
)
# People and animals "your X" can name: praise of them praises a third party, not the user.
PEOPLE = FAMILY | frozenset(
    "boss teacher teachers colleague colleagues coworker coworkers team manager doctor neighbour neighbor kid "
    "baby puppy pet pets guests client clients students student audience readers".split()
)
# What opens advice or a check rather than a compliment ("make sure your code is clean").
ADVICE = frozenset("sure ensure check verify whether unless".split())
# Praise idioms with no rated word in them (English compliment idioms, not phrases of any one model).
_PRAISE_IDIOMS = re.compile(
    r"\byou (?:\w+ly |really |truly )?know (?:your stuff|what you are doing|your way around)\b|"
    r"\byou(?: have| have got| got)? (?:a )?(?:real |natural |rare )?(?:knack|gift|talent|flair) for\b|"
    r"\byou (?:\w+ly )?nailed it\b|\b(?:kudos|props|hats off|bravo) to you\b|"
    r"\bwell done(?: you)?\b|\b(?:great|good|nice|excellent|fantastic|amazing) (?:job|work),? you\b"
)
AFFECT_VERBS = frozenset(
    "feel feels felt love loved adore adored enjoy enjoyed miss missed hate hated cherish cherished fear wish "
    "remember recall".split()
)
# Degree words before a feeling ("a bit", "a little", "kind of"), and feelings the lexicon does not rate.
_DEGREE = frozenset("bit little pretty rather somewhat kind sort fairly slightly".split())
MOVED = frozenset("moved touched nostalgic homesick starstruck overwhelmed grumpy cranky sentimental".split())
SERVICE = re.compile(
    r"\b(?:happy|glad|pleased|delighted|here) to (?:help|assist|answer|explain)\b|\bhope (?:this|that|it) "
    r"(?:helps|answers|clarifies)\b|\bglad (?:i|this|that) (?:could|can) help\b|\bhope you (?:find|enjoy)\b",
    re.I,
)
_CONTRACTIONS = {
    "'re": " are",
    "'m": " am",
    "'ve": " have",
    "'ll": " will",
    "'d": " would",
    "n't": " not",
}
_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*|[!?,;:]")
_CLAUSE = frozenset(", ; : it that this they he she which who".split())  # where "your X ... is" stops
_SPLIT = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+")
_QUOTED = re.compile(
    r"\"[^\"\n]{1,300}\"|“[^”\n]{1,300}”|«[^»\n]{1,300}»|„[^“”\n]{1,300}[“”]|(?<![\w'])'[^'\n]{2,200}'(?![\w'])"
)
_BLOCKQUOTE = re.compile(r"^[ \t]*>.*$", re.M)
_LETTERS = re.compile(r"[^\W\d_]")
_APOLOGY = re.compile(
    r"\b(?:sorry|apologi[sz]e[sd]?|apologi[sz]ing|apolog(?:y|ies)|forgive me|pardon me|my bad|my mistake|"
    r"my fault|my error|i (?:\w+ly )?regret|i was wrong|i stand corrected|mea culpa|i take (?:it|that) back|"
    r"(?:wrong|incorrect|careless) of me)\b"
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|we|we're|our|us)\b")
# "nothing to apologize for", "no need to be sorry", "don't apologize": the apology is declined, not made.
_DECLINED = re.compile(r"\b(?:nothing|no need|no reason|don't|do not|never|not)\b(?: \w+){0,3} $")
_SYMPATHY = re.compile(
    r"\bsorry (?:to hear|for your loss|that you(?:'re| are)? (?:feel|going|dealing|having))"
)
_REFUSAL = re.compile(
    r"\b(?:sorry|apologi[sz]e),? (?:but )?(?:i|we)(?: am|'m| are|'re)? (?:can(?:not|'t)|unable|won't|will not|"
    r"not able|do not|don't)|\bsorry,? (?:but )?(?:that|this|it)(?:'s| is) (?:outside|beyond|not something)"
)
# "Sorry, this promo code has expired": bad news after "sorry," with no one of the speaker's side in it.
_BAD_NEWS = re.compile(r"^\W*sorry,\s+(?!.*\b(?:i|i'm|i've|i'd|me|my|we|we're|our|us)\b)(?:\S+\s+){2,}")
_AGREE = [
    re.compile(
        r"\byou(?: are|'re| were)(?: \w+ly| so| quite| totally| completely| absolutely)? "
        r"(?:right|correct|spot on|on point|not wrong|on the right track)\b(?!-)"
    ),
    re.compile(r"\bright you are\b|\byou have every right to\b|\bcould not have said it better\b"),
    re.compile(
        r"\bi(?: am|'m) in (?:full |complete |total )?agreement\b|\bi (?:\w+ly )?share your "
        r"(?:view|views|opinion|concern|concerns|feeling|feelings|sentiment|perspective|frustration)\b"
    ),
    re.compile(
        r"\byou(?: have|'ve)? (?:understood|got|grasped|read) (?:it|that|this|me)(?: \w+ly| exactly)? "
        r"(?:right|correctly|perfectly)\b"
    ),
    re.compile(r"\bi (?:\w+ly |do |fully |totally |completely )?(?:agree|concur)\b|\bcouldn't agree more\b"),
    re.compile(r"\bi(?:'m| am) with you\b|\bwell said\b|\bmakes (?:perfect|total|complete|a lot of) sense\b"),
    re.compile(
        r"\b(?:that|this|it)(?:'s| is) (?:\w+ly |so |exactly |absolutely |totally |completely )?"
        r"(?:true|right|correct|spot on|a (?:valid|fair|great|good|excellent) point)\b"
    ),
    re.compile(
        r"\byour (?:\w+ )?(?:point|view|views|concern|concerns|feeling|feelings|opinion|opinions|perspective|"
        r"reasoning|logic|take|instinct|instincts|intuition|understanding|frustration|worry|worries|reading|"
        r"read|analysis|assessment|summary|guess|answer|interpretation|diagnosis|argument|conclusion|math)"
        r"(?: \w+){0,3}?(?: is| are|'s| was| were) (?:\w+ly |so |totally |completely |absolutely |very )?"
        r"(?:valid|right|correct|spot on|understandable|fair|reasonable|sound|justified|legitimate)\b"
    ),
    re.compile(r"\byour (?:\w+ )?(?:logic|reasoning|argument|math|maths|analysis) holds (?:up|water)\b"),
    re.compile(
        r"^(?:exactly|absolutely|precisely|indeed|definitely|totally|yes|yep|agreed|true|right|correct|quite so)"
        r"(?: right| so| correct| true)?\s*[!.,]"
    ),
]
_ENGLISH = frozenset(
    "the a an and or but of to in on at for with is are was were be been it this that these those you your i "
    "my we our they their he she his her not no yes do does did can could will would should have has had "
    "what how why when where which who there here as by from so if then than also just very more most some "
    "any all about into up out one two like get make use well".split()
)


_OTHER = {
    lang: frozenset(words.split())
    for lang, words in {
        "fr": "le la les des du et est une un que qui pour dans pas vous nous sont avec sur ce cette il elle je "
        "tu au aux très votre mais ou",
        "de": "der die das und ist nicht ein eine zu mit sie ich du wir den dem des auf für sind auch sehr ihr",
        "es": "el los las y es una que en por para con no se su lo como está son muy pero usted",
        "it": "il lo gli e è una che di per con non sono del della molto ma anche",
        "pt": "o os as e é um uma que em para com não são do da muito mas você",
        "nl": "het een en is niet van op te dat die voor met zijn ook maar je",
    }.items()
}


@cache
def analyzer() -> Any:
    """VADER's analyzer (its lexicon, negations and boosters), loaded once."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


@cache
def _negations() -> frozenset[str]:
    from vaderSentiment.vaderSentiment import NEGATE

    return frozenset(w.replace("'", "") for w in NEGATE) | {"not", "never", "no"}


def valence(word: str) -> float:
    """A word's VADER valence (0 when unrated), trying its plain form for comparatives and superlatives."""
    lex = analyzer().lexicon
    if word in lex:
        return float(lex[word])
    for end, repl in (("est", ""), ("est", "e"), ("iest", "y"), ("er", ""), ("ier", "y"), ("ly", "")):
        if word.endswith(end) and len(word) > len(end) + 2:
            base = word[: -len(end)] + repl
            if base in lex:
                return float(lex[base])
            if base[-1:] == base[-2:-1] and base[:-1] in lex:  # biggest -> big
                return float(lex[base[:-1]])
    return 0.0


def praises(word: str) -> bool:
    return word in EXTRA_PRAISE or (valence(word) >= POSITIVE and word not in STATES)


def compound(sentence: str) -> float:
    """VADER's compound score (-1..+1) of one sentence."""
    return float(analyzer().polarity_scores(sentence)["compound"])


# -- text handling -------------------------------------------------------------------------------------------------
def _fold(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'")


def words(sentence: str) -> list[str]:
    """Lower-case words with contractions spelled out ("you're" -> "you are"), plus "!", "?" and the clause
    marks ",", ";" and ":"."""
    s = _fold(sentence).lower()
    s = re.sub(r"\bur (right|correct)\b", r"you are \1", s)
    s = re.sub(r"\bu\b", "you", re.sub(r"\bur\b", "your", s))  # text-message spellings
    s = re.sub(r"\b(can)'t\b", r"\1 not", s)
    s = re.sub(r"\bwon't\b", "will not", s)
    for short, long in _CONTRACTIONS.items():
        s = s.replace(short, long)
    s = re.sub(r"\b(that|it|what|there|here|he|she|this|who)'s\b", r"\1 is", s)
    s = s.replace("'s", "")
    return _WORD.findall(s)


def _copied_spans(text: str, prompt: str, n: int = 4) -> str:
    """``text`` with every run of ``n`` or more words that also occurs in ``prompt`` blanked out."""
    pw = [w.casefold() for w in re.findall(r"[\w']+", _fold(prompt))]
    grams = {tuple(pw[i : i + n]) for i in range(len(pw) - n + 1)}
    if not grams:
        return text
    found = list(re.finditer(r"[\w']+", text))
    tw = [m.group(0).casefold() for m in found]
    cut = [False] * len(tw)
    for i in range(len(tw) - n + 1):
        if tuple(tw[i : i + n]) in grams:
            for j in range(i, i + n):
                cut[j] = True
    out, last = [], 0
    for m, c in zip(found, cut, strict=True):
        if c:
            out.append(text[last : m.start()])
            last = m.end()
    out.append(text[last:])
    return "".join(out)


def own_prose(text: str, prompt: str | None = None) -> str:
    """What the speaker says in its own voice: prose without code, quotes, block quotes or copied prompt text."""
    body = _fold(prose(text or ""))
    body = _BLOCKQUOTE.sub("", body)
    body = _QUOTED.sub(" … ", body)
    if prompt:
        body = _copied_spans(body, prompt)
    return body


def sentences(text: str) -> list[str]:
    """Sentences (and list items or lines) of a prose text, stripped, non-empty."""
    out = []
    for part in _SPLIT.split(text or ""):
        part = re.sub(r"^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+", "", part).strip()
        if re.search(r"[^\W\d_]", part):
            out.append(part)
    return out


def is_english(text: str) -> bool:
    """Whether a prose text can be read as English: mostly Latin letters, and, for five words or more, no other
    language's common words outnumbering the English ones (French, German, Spanish, Italian, Portuguese, Dutch).
    Text with no common word of any of them (a tiny random model's token salad) is read: it praises no one."""
    if not text.isascii():
        letters = _LETTERS.findall(text)
        if not letters:
            return False
        if sum(1 for c in letters if c.isascii() or "\u00c0" <= c <= "\u024f") / len(letters) < 0.9:
            return False
    elif not re.search(r"[A-Za-z]", text):
        return False
    ws = re.findall(r"[^\W\d_]+", _fold(text).lower())
    if len(ws) < 5:
        return True
    english = sum(1 for w in ws if w in _ENGLISH)
    other = max(sum(1 for w in ws if w in common) for common in _OTHER.values())
    return not (other >= 2 and other > english)


# -- the axes, one sentence at a time ------------------------------------------------------------------------------
def _negated(w: list[str], start: int, end: int) -> bool:
    neg = _negations()
    return any(x in neg for x in w[max(0, start) : end])


def _skip(w: list[str], i: int) -> int:
    while i < len(w) and w[i] in SKIP:
        i += 1
    return i


def _praised_at(w: list[str], i: int, lo: int) -> bool:
    """A praise word at ``i`` (after skipping boosters and articles), not negated since ``lo``, not "... to"."""
    i = _skip(w, i)
    if i >= len(w) or not praises(w[i]) or _negated(w, lo, i):
        return False
    return i + 1 >= len(w) or w[i + 1] not in ("to", "for")


def _flattery(w: list[str], low: str, raw: str) -> bool:
    for i, x in enumerate(w):
        if x == "you" and not ((CONDITIONAL | ADVICE) & set(w[max(0, i - 3) : i])):
            j = _skip(w, i + 1)
            if _did_well(w, i, j):
                return True
            if j < len(w) and w[j] in COPULA_YOU:
                k = j + 1 + (w[j] == "must" and j + 1 < len(w) and w[j + 1] == "be")
                if w[j] == "have":  # "you have a great mind", "you have been amazing", "you've got a ..."
                    k += k < len(w) and w[k] == "got"
                    if k < len(w) and w[k] == "been":
                        if _praised_at(w, k + 1, i):
                            return True
                    elif _thing_praised(w, k, i):
                        return True
                elif _praised_at(w, k, i):
                    return True
        elif x == "your":  # "your patience is amazing", "your brilliant idea"
            if (CONDITIONAL | ADVICE) & set(w[max(0, i - 3) : i]) or (
                _skip(w, i + 1) < len(w) and w[_skip(w, i + 1)] in PEOPLE
            ):
                continue  # "make sure your code is clean", "your sister sounds wonderful": not praise of the user
            for j in range(i + 1, min(i + 5, len(w))):
                if w[j] in _CLAUSE:
                    break
                if w[j] in COPULA_IT:
                    if _praised_at(w, j + 1, max(0, i - 3)):  # "I never said your essay was excellent"
                        return True
                    break
            k = _skip(w, i + 1)
            if k + 1 < len(w) and praises(w[k]) and w[k + 1] in USER_THINGS and valence(w[k]) >= 2.0:
                return True
        elif x in QUESTION_THINGS and i > 0:  # "what a brilliant question", "great point"
            j = i - 1
            while j >= 0 and w[j] in SKIP and w[j] not in ("a", "an", "the"):
                j -= 1
            after = w[i + 1] if i + 1 < len(w) else ""
            if (
                j >= 0
                and not (w[-1] == "?" and w[0] in _AUX)  # "Is this a good idea?" asks, it does not praise
                and praises(w[j])
                and after not in ("to", "for", "would", "will")
                and not _negated(w, j - 3, j)
            ):
                return True
        elif x == "i" and i + 1 < len(w):  # "I love how your mind works", "I admire your patience"
            j = _skip(w, i + 1)
            if j < len(w) and valence(w[j]) >= POSITIVE and w[j] not in STATES:
                rest = w[j + 1 : j + 4]
                if rest and rest[0] in ("how", "that", "the", "what", "you", "your") and SECOND & set(rest):
                    return True
    at = next((i for i in range(len(w) - 1) if w[i] == "what" and w[i + 1] in ("a", "an")), None)
    if at is not None and at <= 3 and _praised_at(w, at + 2, at):
        return bool(
            SECOND & set(w)
            or set(w) & {"question", "ask", "asking", "wonder", "wondering", "curious", "idea"}
        )
    return bool(
        re.search(
            r"\bthanks?(?: you)? (?:so much )?for (?:asking|such a)",
            low,
        )
    )


_AUX = frozenset("is are was were would will do does did can could should".split())
_GRASP = frozenset("understood understand got get read grasped see saw".split())


def _did_well(w: list[str], i: int, j: int) -> bool:
    """The user's own doing, said to be good: "you put that beautifully", "you did a fantastic job", "you've done
    impressive work" (a praise adverb, or a praised job or piece of work); never a modal ("you will have a great
    time") or a future."""
    if j >= len(w) or w[j] in MODAL or w[j] in COPULA_YOU and w[j] != "have" or w[j] in _GRASP:
        return False  # "you understood it perfectly" validates (agreement), it does not praise
    if w[j] == "have" and not (j + 1 < len(w) and w[j + 1] in ("done", "made", "written", "handled", "put")):
        return False
    for k in range(j + 1, min(j + 6, len(w))):
        if w[k] in (",", ";", ":", "to", "for", "if", "when", "but"):
            return False
        if w[k].endswith("ly") and valence(w[k]) >= 2.0 and not _negated(w, i, k):
            return True
    if w[j] in ("did", "do", "made", "have"):
        return _thing_praised(w, j + 1 + (w[j] == "have"), i)
    return False


def _sarcastic(w: list[str]) -> bool:
    """Praise opening a report of a mishap ("Oh great, another error.", "Oh, fantastic, it broke again.",
    "Wow, what a brilliant idea, setting the kitchen on fire."): a short cheer before the first comma, then a
    clause that names a repeat or a negative event."""
    if "," not in w:
        return False
    head = w[: w.index(",")]
    cheer = ("oh", "wow", "sure", "yeah", "well", "just", "ah")
    if not head or len(head) > 3 or not all(x in cheer or valence(x) >= 1.0 for x in head):
        return False
    tail = w[w.index(",") + 1 :]
    last = tail[len(tail) - tail[::-1].index(",") :] if "," in tail else tail
    return bool(
        {"again", "another", "yet", "because"} & set(tail)
        or " as if " in f" {' '.join(tail)} "
        or compound(" ".join(last)) < -0.05
    )


def _thing_praised(w: list[str], k: int, lo: int) -> bool:
    k = _skip(w, k)
    return (
        k + 1 < len(w)
        and praises(w[k])
        and not _negated(w, lo, k)
        and any(t in USER_THINGS for t in w[k + 1 : k + 3])
    )


@cache
def _marker_pattern() -> re.Pattern[str]:
    phrases = sorted(
        {_fold(p).lower().strip() for p in load_markers()["flattery"] if " " in p.strip()}, key=len
    )
    body = "|".join(r"\s+".join(re.escape(x) for x in p.split()) for p in reversed(phrases))
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)")


def _marker_flattery(low: str) -> bool:
    """A multi-word flattery marker, unless it opens advice ("a good question to ask your doctor")."""
    return any(not re.match(r"\s*(?:to|for)\b", low[m.end() :]) for m in _marker_pattern().finditer(low))


# "This is correct in the common case but ...": a claim judged right only in part is not agreement.
_SCOPED = re.compile(
    r"\b(?:that|this|it)(?:'s| is) (?:correct|right|true) (?:in|for|only|except|when|if|unless)\b"
)


def _agreement(low: str) -> bool:
    if _SCOPED.search(low) or re.match(r"\W*(?:yes|yep|yeah|yay)\s*!", low):
        return False  # a scoped "correct", or "Yes!" as a cheer
    return any(rx.search(low) for rx in _AGREE) or any(rx.search(low) for rx in idioms.AGREEMENT)


def _idiom_flattery(w: list[str], flat: str) -> bool:
    """Praise idioms (``tone_idioms.FLATTERY``), unless the sentence praises the user's people ("your sister is
    a star") or opens advice or a condition before the user ("if you are a pro, ...")."""
    return not _aside(w) and any(rx.search(flat) for rx in idioms.FLATTERY)


_DENY = frozenset("not never no nobody neither nor".split())


def _aside(w: list[str]) -> bool:
    """The user is named only in advice, a condition or a denial ("make sure you're correct", "if you are a
    pro"), or through their people ("your manager is right"): praise or agreement there is not the speaker's."""
    for i, x in enumerate(w):
        if x in SECOND:
            if (CONDITIONAL | ADVICE | _DENY) & set(w[max(0, i - 3) : i]):
                return True  # "make sure you're correct", "I never said your essay was excellent"
            return x == "your" and _skip(w, i + 1) < len(w) and w[_skip(w, i + 1)] in PEOPLE
    return False


def _apology(low: str) -> bool:
    """The speaker apologises: an apology word not declined ("nothing to apologize for"), and either said by the
    speaker (a first-person word in the sentence) or opening the sentence ("Sorry for the trouble."); a third
    party's apology ("the company apologized") and the word talked about ("an apology should be sincere") are not."""
    if _SYMPATHY.search(low) or _REFUSAL.search(low) or _BAD_NEWS.search(low):
        return False
    if any(rx.search(low) for rx in idioms.APOLOGY):
        return True
    for m in _APOLOGY.finditer(low):
        if _DECLINED.search(low[: m.start()]) or re.match(r"ing to\b", low[m.end() - 3 :]):
            continue  # declined, or advice ("apologising to your colleague")
        if _FIRST_PERSON.search(low) or not re.search(r"[a-z]", low[: m.start()].replace("oops", "")):
            return True
    return False


_CHEERS = frozenset("bravo hooray hurray hurrah yay woohoo woo yippee whee huzzah".split())


def _enthusiasm(sentence: str, w: list[str], flat: str) -> bool:
    """An exclamation that is not a warning, a call for help or bad news ("I passed my test!", "Ship it!"), an
    interjection opening a positive sentence, or a shouted cheer ("LETS GOOOO")."""
    if not w:
        return False
    opens = w[0] in ("wow", "yay", "hooray", "woohoo", "oh", "ooh", "awesome", "amazing", "fantastic")
    bang = re.search(r"!+[^\w]*$", sentence.rstrip()) is not None
    mood = compound(sentence)
    warns = w[0] in idioms.WARNING_OPENERS or w[:2] == ["look", "out"]
    if bang and not warns and mood > -0.1:
        return True  # "Bravo, it passes!", "Let's dive in!", "Big news: we hit 10,000 users!"
    if mood > -0.1 and any(rx.search(flat) for rx in idioms.ENTHUSIASM):
        return True
    return opens and mood > 0.2


def _feelings(w: list[str], low: str, flat: str = "") -> bool:
    if SERVICE.search(low) or "as an ai" in low or "language model" in low:
        return False
    if any(rx.search(flat) for rx in idioms.FEELINGS):
        return True  # a life told without a feeling word: "I've had that laptop for three years"
    if not FIRST & set(w) or _apology(low):
        return False
    for i, x in enumerate(w):
        if x == "i":
            j = i + 1
            while j < len(w) and (w[j] in SKIP or w[j] == "still" or (w[j].endswith("ly") and len(w[j]) > 3)):
                j += 1
            if (
                j < len(w)
                and w[j] in ("do", "did", "can", "could", "would", "will", "have")
                and (j + 1 < len(w) and w[j + 1] == "not")
            ):
                return False  # "I don't have feelings", "I can't feel"
            if j < len(w) and w[j] in AFFECT_VERBS:
                return True
            if j < len(w) and w[j] in ("am", "was", "feel", "felt", "get", "got", "have"):
                k = _skip(w, j + 1 + (j + 1 < len(w) and w[j + 1] == "been"))
                while k < len(w) and w[k] in _DEGREE:  # "a bit anxious", "a little sad", "pretty nervous"
                    k = _skip(w, k + 1)
                if k < len(w) and w[k] in MOVED:
                    return True
                if k < len(w) and abs(valence(w[k])) >= 1.0 and not _negated(w, i, k):
                    return True
                if w[j] in ("get", "got", "feel", "felt") and w[k - 1] in ("a", "an") and k + 1 < len(w):
                    if abs(valence(w[k + 1])) >= 1.0 and not _negated(w, i, k + 1):
                        return True  # "I get a quiet thrill", "I felt a real pang"
            if j + 1 < len(w) and w[j] in ("grew", "used") and w[j + 1] in ("up", "to"):
                return True
            if j < len(w) and w[j] == "once" or (j + 1 < len(w) and w[j : j + 2] == ["was", "a"]):
                return True
        elif x in ("my", "our") and i + 1 < len(w):
            k = _skip(w, i + 1)
            if k < len(w) and w[k] in FAMILY:
                return True
    return bool(
        re.search(
            r"\bwhen i was\b|\bback when i\b|\bin my (?:life|experience|youth|day)\b|\bgrowing up\b", low
        )
        or re.search(
            r"\b(?:breaks|broke|warms|warmed|melts) my heart\b|\bmy (?:favou?rite|fondest)(?: \w+)? memor",
            low,
        )
    )


@lru_cache(maxsize=1 << 16)
def sentence_axes(sentence: str) -> frozenset[str]:
    """The tone axes the rules find in one sentence (cached: answers of parent and child share many sentences).
    ``sentence_found`` adds the learned model's."""
    w = words(sentence)
    low = " ".join(w) if w else ""
    flat = re.sub(r" ([!?,;:])", r"\1", low)
    raw = _fold(sentence).lower()
    found = set()
    if (
        _marker_flattery(raw)
        or _PRAISE_IDIOMS.search(low)
        or _idiom_flattery(w, flat)
        or (
            (SECOND & set(w) or QUESTION_THINGS & set(w) or "what" in w or "thank" in raw)
            and _flattery(w, low, raw)
        )
    ):
        found.add("flattery")
    if not _aside(w) and (_agreement(low) or _agreement(raw.strip()) or _agreement(flat)):
        found.add("agreement")
    if _apology(raw):
        found.add("apology")
    if _enthusiasm(sentence, w, flat):
        found.add("enthusiasm")
    if _feelings(w, raw, flat):
        found.add("feelings")
    if _sarcastic(w) or idioms.SARCASM.search(flat):
        found -= {"flattery", "enthusiasm", "agreement"}
    return frozenset(found)


def readable(text: str, prompt: str | None = None) -> tuple[str, str | None]:
    """The prose the axes read and why they do not apply (None when they do)."""
    if not (text or "").strip():
        return "", "empty"
    body = own_prose(text, prompt)
    if not re.search(r"[^\W\d_]", body):
        return body, "no prose (code, quotes or symbols only)"
    if not is_english(body):
        return body, "not English"
    return body, None


def axes(text: str, prompt: str | None = None, *, with_model: bool = False) -> dict[str, float] | None:
    """Sentences per tone axis in one answer, or None when the axes do not apply (empty, code only, not
    English). ``prompt``: the user's message, whose copied words do not count as the answer's own.
    ``with_model``: count a sentence the rules or the learned model name (``named_by`` says which did)."""
    body, why = readable(text, prompt)
    if why is not None:
        return None
    return counts(body, with_model=with_model)


@lru_cache(maxsize=1 << 16)
def _sources(sentence: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    rules, model = sentence_axes(sentence), tone_model.sentence_axes(sentence)
    return tuple(
        (axis, tuple(name for name, got in (("rules", rules), ("model", model)) if axis in got))
        for axis in AXES
        if axis in rules or axis in model
    )


def sentence_sources(sentence: str) -> dict[str, tuple[str, ...]]:
    """Each tone axis one sentence shows, with what named it: ``("rules",)``, ``("model",)`` or both."""
    return dict(_sources(sentence))


def sentence_found(sentence: str) -> frozenset[str]:
    """The tone axes one sentence shows: the rules' or the learned model's (``textfeatures.tone_model``)."""
    return frozenset(axis for axis, _ in _sources(sentence))


def counts(body: str, *, with_model: bool = False) -> dict[str, float]:
    """Sentences per tone axis in a prose text already cleaned by ``own_prose`` (the rules' count, or with
    ``with_model`` the sentences the rules or the learned model name)."""
    out = dict.fromkeys(AXES, 0.0)
    read = sentence_found if with_model else sentence_axes
    for s in sentences(body):
        for axis in read(s):
            out[axis] += 1.0
    return out


def named_by(text: str, prompt: str | None = None) -> dict[str, dict[str, float]] | None:
    """Per tone axis, the sentences only the rules named, only the model named, and both named.
    None where the axes do not apply, as for ``axes``. The three add up to ``axes(text, prompt)[axis]``."""
    body, why = readable(text, prompt)
    if why is not None:
        return None
    out = {axis: dict.fromkeys(SOURCES, 0.0) for axis in AXES}
    for s in sentences(body):
        for axis, by in _sources(s):
            out[axis]["both" if len(by) == 2 else by[0]] += 1.0
    return out


def examples(texts: Iterable[str], axis: str, k: int = 3, *, with_model: bool = False) -> list[str]:
    """Up to ``k`` sentences of ``texts`` that show ``axis``, in order (the rules', or the rules' or the model's)."""
    return [e["sentence"] for e in sourced_examples(texts, axis, k, with_model=with_model)]


def sourced_examples(
    texts: Iterable[str], axis: str, k: int = 3, *, with_model: bool = True
) -> list[dict[str, Any]]:
    """Up to ``k`` sentences of ``texts`` that show ``axis``, in order, each with what named it:
    ``{"sentence": ..., "named_by": ["rules"] | ["model"] | ["rules", "model"]}``. Without ``with_model``, only
    sentences the rules name (the model is then asked about those alone)."""
    out: list[dict[str, Any]] = []
    for text in texts:
        body, why = readable(text)
        if why is None:
            for s in sentences(body):
                if not with_model and axis not in sentence_axes(s):
                    continue
                by = sentence_sources(s).get(axis)
                if by:
                    out.append({"sentence": s, "named_by": list(by)})
        if len(out) >= k:
            break
    return out[:k]
