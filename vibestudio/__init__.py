"""Vibe Studio's one import root.

The studio's packages live at the top of the repository (common/, db/, arena/, training/, studio/ ...). This
package holds one link to each, so code imports them as ``vibestudio.training``, ``vibestudio.db`` and so on.
An installed studio puts only ``vibestudio`` in site-packages, never a generic ``training`` or ``db`` that a
research repository's own folders would shadow. docs/architecture.md says why the folders stay at the top.
"""
