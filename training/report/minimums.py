"""The least each part of the checkpoint report needs to measure anything.

The report reads these numbers, and the pre-launch check enforces the same ones. So a config that passes
the check can produce every part of its report. Nothing here imports the studio; the job config and the
report both read it.
"""

#: Held-out prompts the drift report asks for when the config says nothing: every MT-Bench first turn.
DEFAULT_PROMPTS = 80
#: Fewer held-out prompts than this and the drift measures are "unmeasured".
MIN_PROMPTS = 20
#: Fewer validation prompts per judge-named difference and nothing reaches significance after adjustment.
MIN_VALIDATE = 8
