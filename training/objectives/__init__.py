"""The objectives and their trainers.

DPO, its kin (KTO, ORPO, SimPO), the reward model and GRPO with its rewards. Each trainer takes a
``JobContext`` (``context``) and returns what it trained. Beside them are the KL and over-optimisation
checks the trainers log while they train, and the gold-reward check.
"""
