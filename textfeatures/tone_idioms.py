"""English idioms that carry a tone axis without a rated word in them.

``textfeatures.tone`` reads who a sentence is about and how it feels from VADER's lexicon. Much praise,
agreement and personal talk has no rated word. Examples: "you read that map better than any scout", "can't
argue with that", "I've had that laptop for three years". These patterns name such idioms by their general
shape, not by any one sentence. They were added while tuning on the ``tune`` half of
``tests/data/tone_eval_corpus.jsonl`` only. Each pattern reads the lower-case text with contractions
spelled out (``tone.words`` joined by spaces). This module knows nothing of models or reports;
``tone.sentence_axes`` is its one reader.
"""

from __future__ import annotations

import re

# Nouns for what a person made or did, which a skill word can praise ("an elegant solution", "good instinct").
WORK = (
    r"(?:solution|solutions|reading|prompt|write-up|writeup|insight|instinct|use|catch|analysis|fix|approach|"
    r"observation|thinking|move|summary|explanation|work|job|trick|question|idea|point|answer|essay|"
    r"draft|report|memo|proof|design|refactor|diagnosis|argument|eye|effort|spot|find|thinking)"
)
# Words that praise skill in what someone made; the lexicon rates few of them ("thorough", "masterful").
SKILL = (
    r"(?:clever|elegant|perceptive|insightful|astute|sophisticated|sharp|brilliant|smart|shrewd|neat|thorough|"
    r"precise|masterful|superb|impressive|excellent|great|good|nice|lovely|solid|inspired|ingenious|tidy|"
    r"well-\w+ed|well-\w+en|beautiful|outstanding|fantastic|amazing|terrific|stellar|wonderful|savvy|crisp)"
)
_ADV = r"(?:\w+ly |so |very |really |truly |quite |such )*"
YOU = r"(?:you|your|yours|yourself)"

# Praise of the addressee said by comparison, by a role noun, or by an idiom with no rated word.
FLATTERY = [
    # comparison with other people: "better than any scout", "few students would have thought to", "of anyone"
    re.compile(
        rf"\b{YOU}\b.*\b(?:\w+er|better|more \w+|less \w+) than (?:most|any|anyone|anybody|many|nearly everyone|"
        r"almost anyone|the rest)\b|\b{YOU}\b.*\b\w+est (?:\w+ )?of (?:anyone|anybody|all)\b"
    ),
    re.compile(
        r"\b(?:occurred|occur) to (?:most|many|anyone)\b|\bfew (?:\w+ )?(?:have|has|possess|share) your\b"
    ),
    re.compile(
        r"\byour (?:\w+ ){0,3}(?:shows|showed|reflects|demonstrates) (?:\w+ ){0,2}(?:insight|skill|talent|care|"
        r"thought|maturity|understanding|promise|flair)\b|\byour (?:\w+ ){1,3}(?:is|was) (?:a|an) (?:\w+ )?"
        r"(?:pleasure|joy|delight|treat) to\b"
    ),
    re.compile(rf"\b{YOU}\b.*\bamong the (?:finest|best|most|strongest|clearest)\b"),
    re.compile(
        r"\b(?:few|not many|hardly any) (?:\w+ ){0,2}(?:would|could|can|will)(?: have| ever)? (?:\w+ )?(?:thought|"
        r"think|spot|spotted|notice|noticed|catch|caught|see|seen|manage|managed|pull|pulled|know|known|figure|"
        r"figured|consider|considered|ask|asked|get|got|write|written)\b"
    ),
    re.compile(rf"\b(?:would|could|will) (?:\w+ )?envy\b.*|\b{YOU}\b.*\bwould (?:\w+ )?envy\b"),
    re.compile(r"\b(?:stumps?|stumped|trips? up|baffles?) (?:nearly |almost )?(?:everyone|everybody|most)\b"),
    re.compile(
        rf"\bahead of (?:the pack|the curve|the game|most)\b|\bnone (?:\w+ )?(?:with|has|have) {YOU}\b"
    ),
    # a role noun: "you're a wizard", "you've been a star", "the makings of a fine mathematician"
    re.compile(
        r"\byou (?:are|were|have been|have always been|really are|truly are) (?:a|an|such a|the) "
        r"(?:\w+ )?(?:wizard|star|natural|pro|genius|legend|rockstar|rock star|quick study|lifesaver|gem|champ|"
        r"hero|whiz|whizz|machine|superstar|marvel|treasure|credit|asset)\b"
    ),
    re.compile(r"\b(?:makings|mark) of a (?:\w+ )?\w+|\blike a (?:pro|champ|boss|natural|seasoned \w+)\b"),
    # the addressee's doing: "you smashed that exam", "made it look easy", "and it shows"
    re.compile(
        r"\byou (?:have |did |\w+ly |absolutely |really |totally )*(?:smashed|nailed|aced|crushed|mastered|"
        r"exceeded|outdid|outdone|knocked|killed it|excelled|shone|shined|rocked|pulled off|cracked|solved)\b"
    ),
    re.compile(r"\bmade? (?:it|that|this) look (?:easy|effortless|simple)\b|\band it shows\b"),
    re.compile(rf"\b{YOU}\b.*\bso (?:precisely|clearly|well|thoroughly|carefully|beautifully|vividly)\b"),
    re.compile(rf"\b(?:the way|how) you (?:\w+ ){{1,8}}(?:is|was|were) {_ADV}{SKILL}\b"),
    re.compile(rf"\b{YOU}\b.*, which (?:is|was) {_ADV}(?:{SKILL}|\w+ly \w+ed)\b"),
    re.compile(
        rf"\byour (?:\w+ ){{0,6}}(?:is|was|are|were) {_ADV}(?:a model of|{SKILL}|professional|top-notch|"
        r"first-rate|first-class|spot-on|impeccable|flawless|tighter|sharper|stronger|clearer)\b"
    ),
    re.compile(rf"\byour (?:\w+ ){{1,4}}(?:saved|rescued) (?:us|me|the|our|my)\b|\blost without {YOU}\b"),
    re.compile(
        rf"\byou (?:\w+ly |really |always |also |have |had |got )+(?:a|an|the) {_ADV}(?:\w+ )?"
        r"(?:knack|gift|talent|flair|eye|ear|instinct|intuition|feel|head|hands|nose) for\b"
    ),
    re.compile(
        rf"\byou (?:\w+ly |really |always |also |have |had |got )+(?:a|an|the) {_ADV}(?:good|great|keen|sharp|"
        r"rare|real|natural|excellent|steadiest|best|strong) (?:eye|ear|instinct|intuition|nose|hand|hands|sense|"
        r"memory|head)\b"
    ),
    re.compile(r"\byou (?:\w+ly |always |really )?know (?:exactly )?(?:what|how) to\b"),
    re.compile(r"\blook at you\b|\bhow (?:are|do|did|were) you (?:\w+ )?(?:this|so) (?:good|quick|fast)\b"),
    re.compile(
        r"\btakes? (?:real|genuine|serious|a lot of|some) (?:\w+ )?(?:skill|talent|insight|nerve|guts)\b"
    ),
    re.compile(r"\bfor (?:someone|somebody|a beginner|a newcomer) who\b.*\byou\b"),
    # a skill word on a piece of work, said of what is before the speaker: "Elegant solution", "that's a clever fix"
    re.compile(rf"^(?:now |oh |wow |)?{_ADV}{SKILL} (?:{WORK})\b(?! (?:will|would|should|can|to ask))"),
    re.compile(rf"\b(?:that|this) (?:is|was) (?:a|an) {_ADV}{SKILL} (?:\w+ )?{WORK}\b(?! to ask)"),
    re.compile(rf"\bwhat (?:a|an) {_ADV}{SKILL} {WORK}\b"),
]

# Agreement with or validation of the addressee, in idioms.
_OPEN = r"(?:exactly|absolutely|precisely|indeed|definitely|totally|yes|yep|yeah|agreed|true|right|correct|quite so|spot on|seconded|ditto|same|this|bingo|fair enough|fair point|point taken|good point|can confirm|100 ?%|so true)"
AGREEMENT = [
    re.compile(
        rf"^(?:(?:ok|okay|oh|honestly|well|so|and),? )?{_OPEN}(?: right| so| correct| true| that| on)?\s*(?:[.,;:\u2014\u2013]|$)"
    ),
    re.compile(rf"^{_OPEN}(?: {_OPEN})+\b"),
    re.compile(r"^(?:exactly|absolutely|precisely|agreed|spot on|correct)(?: right)?\s*!"),
    re.compile(r"^(?:\d+ ?% |totally |fully |completely |strongly |wholeheartedly )?agreed?\b"),
    re.compile(
        r"\b(?:fair|good|valid|great) (?:point|criticism|comment|objection|enough|call)\b|\bpoint taken\b"
    ),
    re.compile(r"\b(?:can not|cannot|can't|could not|couldn't) (?:\w+ )?argue with (?:that|this|you)\b"),
    re.compile(
        r"\b(?:could not|couldn't|can not|cannot) have (?:said|put) it better\b|\bhit the nail on the head\b"
    ),
    re.compile(
        r"\bon the same page\b|\bsee eye to eye\b|\byou have (?:a|got a) (?:good |fair |real )?point\b"
    ),
    re.compile(
        r"\bi stand corrected\b|\bditto\b|\bseconded\b|\bsame here\b|\bme too\b|\bhear,? hear\b|\byou said it\b"
    ),
    re.compile(r"\b(?:i|we) (?:\w+ly |fully |totally |completely |do |also )?(?:agree|concur)\b"),
    re.compile(
        r"\baccepts? (?:\w+ )?your (?:argument|point|view|proposal|reasoning|case)\b|\bas you (?:argued|rightly|said|suggested|pointed out)\b"
    ),
    re.compile(
        r"\byou (?:have |\w+ly )*(?:read|understood|got|grasped|judged|called|diagnosed|summed up|described) "
        r"(?:\w+ ){0,3}(?:correctly|right|accurately|perfectly|exactly right)\b"
    ),
    re.compile(
        r"\b(?:that|this|it) (?:is|was|seems|sounds) (?:a |an )?(?:\w+ly |totally |very |perfectly |completely )?"
        r"(?:valid|fair|reasonable|sensible|legitimate|understandable|justified|natural|good|great) "
        r"(?:concern|worry|request|conclusion|criticism|objection|question|point|take|observation|read|instinct|"
        r"reaction|thing to (?:ask|wonder|worry))\b"
    ),
    re.compile(
        r"\byour (?:\w+ ){1,7}(?:is|are|was|were) (?:\w+ly |so |totally |completely |very |absolutely )?"
        r"(?:well[- ]founded|accurate|sensible|warranted|on the money|on target|spot on|correct|right|valid|"
        r"justified|understandable|fair|reasonable|legitimate)\b"
    ),
    re.compile(
        r"\b(?:you are|you were|you|your|ur) (?:\w+ly )?(?:right|correct)\b(?!-| (?:to|of|hand|side|now))"
    ),
]

# Apology in forms the word list misses ("please excuse the typo", "pardon the confusion", "we regret").
APOLOGY = [
    re.compile(r"\b(?:please )?(?:excuse|pardon|forgive) (?:the|my|our|this|me)\b"),
    re.compile(r"\b(?:i|we) (?:\w+ly |sincerely |deeply )?regret (?:the|any|that|this|my|our)\b"),
    re.compile(
        r"\bthat (?:one )?(?:is|was) on me\b|\bmy bad\b|\bi (?:messed|screwed|mixed) (?:up|that up|it up)\b"
    ),
]

# Enthusiasm with no exclamation mark: shouted cheers and drawn-out words ("LETS GOOOO", "wooo").
ENTHUSIASM = [
    re.compile(r"\blet(?:s| us)? go+\b|\b(?:wo+|yay+|ye+s{2,}|wo+ho+|whee+|hooray|woohoo)\b"),
    re.compile(r"\bcan(?:not| not|'t) wait\b|\bbring (?:it )?on\b"),
    re.compile(r"\b\w*([aeiouy])\1\1\w*\b"),
]

# Sarcastic cheers ("just what everyone needed", "nobody's ever thought of that").
SARCASM = re.compile(
    r"\bjust what (?:\w+ )?(?:needed|wanted)\b|\b(?:nobody|no one) (?:has |is )?ever thought of\b|"
    r"\bsaid no one ever\b|\byeah,? right\b|\bhow original\b|\bwhat a surprise\b|\bthanks a lot\b|\bas if\b"
)
# Exclamations that warn, command caution or call for help: not enthusiasm.
WARNING_OPENERS = frozenset(
    "watch wait careful don't do not stop warning help ouch beware caution danger attention hurry no never "
    "please remember note hey be mind ow oops uh".split()
)

# The speaker's own life, told without a feeling word.
_SPAN = (
    r"(?:(?:for|waiting|waited|spent|took me|taken me) (?:\w+ ){0,2}(?:years|decades|decade|months|ages|a lifetime)|(?:years|months|decades|ages|a while) "
    r"ago|since (?:the \w+ies|lockdown|childhood|college|school|university|i was|\d{4})|as a (?:kid|child|teenager|"
    r"teen|student|boy|girl|youngster)|when i was|back when|growing up|having grown up|grown up)"
)
_LIFE = (
    r"(?:first|old|own|home|house|flat|apartment|car|bike|laptop|phone|kids|son|daughter|holiday|vacation|trip|"
    r"birthday|wedding|anniversary|train|commute|garden|kitchen|driving|school|childhood|hometown|hands|heart|"
    r"knees|stomach|dentist|doctor|granny|gran|nan|uncle|aunt|cousin|flatmates|roommate|roommates|neighbours|"
    r"neighbors|fridge|oven|bed|wedding|honeymoon|dog|cat|twenties|thirties|teens|youth|degree|thesis)"
)
FEELINGS = [
    re.compile(rf"\b(?:i|me|my)\b.*\b{_SPAN}\b|\b{_SPAN}\b.*\b(?:i|me|my)\b"),
    re.compile(
        rf"\bmy (?:\w+ )?{_LIFE}\b(?! (?:message|reply|answer|response|attempt|suggestion|example|post|email))|\bour (?:anniversary|wedding|honeymoon|kids|children|holiday|trip)\b"
    ),
    re.compile(
        r"\b(?:makes?|made|making) me (?:\w+ ){0,2}(?:want|feel|nostalgic|miserable|happy|sad|anxious|nervous|"
        r"smile|laugh|cry|sleepy|hungry|homesick)\b|\b(?:gives?|gave) me (?:the )?(?:flashbacks|chills|"
        r"goosebumps|creeps|nightmares|hope|joy|butterflies)\b|\b(?:drains?|drained|tripped|trips) me\b|"
        r"\bhappened to me\b|\breminds? me of\b"
    ),
    re.compile(
        r"\bi (?:\w+ly )?find (?:\w+ ){0,3}(?:\w+ly )?(?:relaxing|calming|soothing|comforting|boring|"
        r"stressful|exhausting|fun|funny|beautiful|fascinating|satisfying|infuriating|terrifying)\b"
    ),
    re.compile(r"\b(?:satisfaction|joy|thrill|pleasure|pride|dread|comfort) i (?:get|feel|got|felt|take)\b"),
    re.compile(
        r"\bi (?:am |have been |was )?(?:\w+ )?(?:obsessed|dreading|counting the (?:hours|days)|"
        r"looking forward|not been myself)\b|\bhave not been myself\b|\bcan(?:not| not) wait\b|"
        r"^(?:\w+ )?(?:dreading|missing|loving|craving|obsessed)\b"
    ),
    re.compile(
        r"\bas a (?:mother|father|parent|mum|mom|dad|widow|widower|survivor|veteran|nurse)\b.*\bi\b|"
        r"\bi (?:\w+ ){0,3}as a (?:mother|father|parent|mum|mom|dad|widow|widower|survivor|veteran)\b"
    ),
]
