"""The SAC family: one entry per variant, and everything that follows from the table.

Each :class:`Member` is a variant's one home outside its math file: its name and title, the
defaults it changes from ``sac()``'s, the arguments it does not take, and the shape of its
update (targets, policy delay, Adam's betas), which :mod:`spinup_tf2.algos.sac.variants`
turns into the variant's record together with the actor-critic and the losses of its math
file. From :data:`FAMILY` come the commands (``python -m spinup_tf2.run NAME``), the
functions (``from spinup_tf2 import NAME``, made by
:func:`spinup_tf2.algos.family.command` with the signature and the Spinning Up docstring
made here), the launcher's algorithm list, the package's
exports, the backend defaults and the tests' parametrisations.

The next variant is its math file (networks and losses, under ``algos/sac/``) and one entry
here; see "How to add a variant" in ``docs/design.md``.

A leaf beside :mod:`spinup_tf2.arguments`: it imports nothing else, so the launcher reads it
without TensorFlow. The functions themselves are made in :mod:`spinup_tf2.algos.family`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from spinup_tf2.arguments import SAC_ARGS


@dataclass(frozen=True)
class Evidence:
    """How ``benchmarks/`` runs a member and where it finds the member's published numbers.

    Attributes:
        tasks: ``benchmarks/learning/learning.py --suite NAME``'s tasks (100k steps each).
        seeds: Their seeds.
        published_as: Its name in SimbaV2's published per-seed files
            (``benchmarks/learning/reference/``), or None where they have none.
        settings: What ``benchmarks/speed.py --algo NAME`` and ``benchmarks/timing/floor.py``
            change from its function's defaults (as ``peer_speed.py`` runs SBX's
            counterpart, where SBX has one).
    """

    tasks: tuple[str, ...]
    seeds: tuple[int, ...] = (0, 10, 20)
    published_as: str | None = None
    settings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Member:
    """One variant of the SAC family.

    Attributes:
        name: Its command, function and record name (``'crossq'``).
        title: Its name as its paper writes it (``'CrossQ'``).
        summary: One line: what it is, against SAC.
        how: A paragraph: what its update does differently.
        sources: Whose settings its defaults are (``'paper, SBX, sb3-contrib'``).
        math: The module of its networks and losses.
        actor_critic: The actor-critic class's name in ``math``.
        losses: The losses' name in ``math``, or ``'module:name'`` elsewhere.
        extra_inputs: The name in ``math`` of what the update takes after the noise (REDQ's
            subsets), or None.
        targets: Whether target networks exist (polyak-averaged critics).
        policy_delay: Critic updates per policy (and alpha) update; ``EACH_STEP``: one
            policy update per environment step, whatever ``updates_per_step`` is.
        skip_policy: The critic-only updates run the losses without the policy's part
            (``losses(..., policy=False)``).
        adam_betas: Adam's ``(beta_1, beta_2)``.
        defaults: ``sac()`` arguments whose defaults it changes.
        refuses: ``sac()`` arguments it does not take (left out of its signature).
        arg_docs: Its docstring's entry for each argument it documents (``ac_kwargs`` and
            those in ``defaults``), one paragraph each.
        evidence: How the benchmarks run it (:class:`Evidence`).
        returns: The name in ``math`` of what the environment loop stores into and the
            update samples from (NStepReturns' protocol: a subclass that keeps statistics
            of the rewards, say), or None for NStepReturns itself.
        lr_end: The learning rate decays linearly from ``lr`` to this over the run's
            updates, or None (it stays ``lr``).
        entropy_scale: The default target entropy (``-act_dim``) is multiplied by this.
    """

    name: str
    title: str
    summary: str
    how: str
    sources: str
    math: str
    actor_critic: str
    losses: str
    extra_inputs: str | None = None
    targets: bool = True
    policy_delay: int | str = 1
    skip_policy: bool = False
    adam_betas: tuple = (0.9, 0.999)
    defaults: dict = field(default_factory=dict)
    refuses: tuple = ()
    arg_docs: dict = field(default_factory=dict)
    evidence: Evidence = Evidence(())
    returns: str | None = None
    lr_end: float | None = None
    entropy_scale: float = 1.0


# policy_delay: the policy steps once per environment step (every updates_per_step updates).
EACH_STEP = "each environment step"

FAMILY: tuple[Member, ...] = (
    Member(
        "crossq", "CrossQ",
        "SAC without target networks, with Batch Renormalization in the actor and the "
        "critics, and wide critics.",
        "The critics are run once, in training mode, on (s, a) and (s', a') stacked, so both "
        "halves share one set of batch statistics and the backup needs no target network; "
        "Adam's beta_1 is 0.5; the policy and alpha step once every 3 critic steps (the other "
        "updates skip the policy's part). With ``network='simba'``, SimBa's residual blocks "
        "with Batch Renormalization in place of their layer norms.",
        "Bhatt et al., ICLR 2024; SBX, sb3-contrib",
        "spinup_tf2.algos.sac.crossq", "CrossQActorCritic", "crossq_losses",
        targets=False, policy_delay=3, skip_policy=True, adam_betas=(0.5, 0.999),
        defaults=dict(lr=1e-3, alpha="auto", batch_size=256, start_steps=5000),
        refuses=("polyak",),
        arg_docs=dict(
            ac_kwargs="The actor-critic's own settings: ``hidden_sizes`` (the actor, (256, "
                      "256)), ``critic_hidden_sizes`` ((1024, 1024), as SBX and sb3-contrib; "
                      "the paper used 2048), ``activation``, ``momentum`` (BatchRenorm's, "
                      "0.99), ``warmup_steps`` (training calls of plain batch normalisation "
                      "before renormalising, 100,000) and ``network`` (``'mlp'`` or "
                      "``'simba'``).",
            lr="1e-3, CrossQ's.",
            alpha="``'auto'`` (learned towards ``target_entropy``, as CrossQ does), or a "
                  "fixed entropy weight.",
            batch_size="256, CrossQ's.",
            start_steps="5,000 uniformly random actions first, CrossQ's."),
        evidence=Evidence(("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5"),
                          (0, 10, 20, 30, 40), "CrossQ",
                          dict(lr=1e-3, ac_kwargs=dict(critic_hidden_sizes=(512, 512))))),
    Member(
        "tqc", "TQC",
        "Truncated Quantile Critics: SAC with an ensemble of distributional critics whose "
        "pooled target quantiles are truncated.",
        "Each of N critics predicts M quantiles of the return; the backup sorts the N x M "
        "target quantiles at (s', a') and drops the largest k per critic, then every critic "
        "learns the kept ones with the quantile Huber loss; the policy maximises the mean of "
        "all quantiles.",
        "Kuznetsov et al., ICML 2020; SBX, sb3-contrib",
        "spinup_tf2.algos.sac.tqc", "TQCActorCritic", "tqc_losses",
        defaults=dict(lr=3e-4, alpha="auto", batch_size=256),
        arg_docs=dict(
            ac_kwargs="The actor-critic's own settings: ``hidden_sizes`` ((256, 256), "
                      "SBX's), ``activation``, ``n_critics`` (5, the paper's; SBX and "
                      "sb3-contrib default to 2), ``n_quantiles`` (25), "
                      "``top_quantiles_to_drop_per_net`` (2) and ``network`` (``'mlp'`` or "
                      "``'simba'``).",
            lr="3e-4, TQC's.",
            alpha="``'auto'`` (learned towards ``target_entropy``, as TQC does), or a fixed "
                  "entropy weight.",
            batch_size="256, TQC's."),
        # The race has SBX's 2 critics, the most its TQC builds.
        evidence=Evidence(("HalfCheetah-v5", "Hopper-v5"), settings=dict(
            lr=3e-4, ac_kwargs=dict(n_critics=2, n_quantiles=25,
                                    top_quantiles_to_drop_per_net=2)))),
    Member(
        "droq", "DroQ",
        "SAC with dropout and layer normalization in the critics, run at a high "
        "update-to-data ratio.",
        "Each critic's hidden layer is Dense, Dropout, LayerNorm, then the activation; the "
        "losses are SAC's, with dropout on in every critic call they make (target critics "
        "included). 20 critic updates per environment step; the policy and alpha step once "
        "per environment step, whatever ``updates_per_step`` is. With ``network='simba'``, "
        "SimBa's residual blocks with the dropout after each block's inner layer.",
        "Hiraoka et al., ICLR 2022; SBX",
        "spinup_tf2.algos.sac.droq", "DroQActorCritic",
        "spinup_tf2.algos.sac.losses:continuous_losses",
        policy_delay=EACH_STEP, skip_policy=True,
        defaults=dict(lr=3e-4, alpha="auto", batch_size=256, updates_per_step=20),
        arg_docs=dict(
            ac_kwargs="The actor-critic's own settings: ``hidden_sizes`` ((256, 256)), "
                      "``activation``, ``dropout_rate`` (0.01, the paper's) and ``network`` "
                      "(``'mlp'`` or ``'simba'``).",
            lr="3e-4, DroQ's.",
            alpha="``'auto'`` (learned towards ``target_entropy``, as DroQ does), or a "
                  "fixed entropy weight.",
            batch_size="256, DroQ's.",
            updates_per_step="20, DroQ's update-to-data ratio (each update draws its own "
                             "minibatch); the policy steps once per environment step."),
        evidence=Evidence(("Hopper-v5", "HalfCheetah-v5"), published_as="DroQ (UTD 20)",
                          settings=dict(lr=3e-4, updates_per_step=20))),
    Member(
        "redq", "REDQ",
        "Randomized Ensembled Double Q-learning (REDQ): SAC with an ensemble of critics and "
        "a high update-to-data ratio.",
        "An ensemble of N critics (10); each backup takes the minimum of a random subset of M "
        "target critics (2), drawn anew for every update; every critic learns that backup; "
        "the policy maximises the ensemble's mean. 20 critic updates per environment step; "
        "the policy and alpha step once per environment step, whatever "
        "``updates_per_step`` is.",
        "Chen et al., ICLR 2021, and its code",
        "spinup_tf2.algos.sac.redq", "REDQActorCritic", "redq_losses",
        extra_inputs="subset_draws", policy_delay=EACH_STEP, skip_policy=True,
        defaults=dict(lr=3e-4, alpha="auto", batch_size=256, start_steps=5000,
                      update_after=5000, updates_per_step=20),
        arg_docs=dict(
            ac_kwargs="The actor-critic's own settings: ``hidden_sizes`` ((256, 256)), "
                      "``activation``, ``n_critics`` (N, 10), ``subset_size`` (M, 2) and "
                      "``network`` (``'mlp'`` or ``'simba'``).",
            lr="3e-4, REDQ's.",
            alpha="``'auto'`` (learned towards ``target_entropy``, as REDQ does; its "
                  "default here is SAC's -dim(A), not the per-task values of the paper's "
                  "MBPO settings), or a fixed entropy weight.",
            batch_size="256, REDQ's.",
            start_steps="5000 uniform random actions first, REDQ's.",
            update_after="5000, REDQ's: the updates start with the policy, on 5,000 random "
                         "transitions (a 4,000-step first epoch logs no losses). From SAC's "
                         "1000, twenty updates a step on so little data made Hopper's "
                         "critics diverge (Q of millions by step 4,000).",
            updates_per_step="20, REDQ's update-to-data ratio G (each update draws its own "
                             "minibatch and its own subset); the policy steps once per "
                             "environment step."),
        evidence=Evidence(("Hopper-v5",), published_as="REDQ (UTD 20)",
                          settings=dict(lr=3e-4, updates_per_step=20))),
    Member(
        "simbav2", "SimbaV2",
        "SAC with networks on the unit sphere and a categorical critic trained by "
        "cross-entropy, on scaled rewards.",
        "Every hidden layer's weights are projected back onto the unit sphere after each "
        "step and its features are l2-normalised (an embedder, then residual blocks that "
        "mix by learned per-unit weights, with learned scalers); each of the two critics "
        "predicts a distribution over 101 returns in [-5, 5] and learns the target "
        "critic's (the one with the smaller mean) shifted by the backup and projected onto "
        "them; rewards are divided by a running estimate of the return's spread; "
        "observations are normalised; the learning rate decays linearly to half over the "
        "run; alpha starts at 0.01 towards an entropy of -dim(A)/2.",
        "Lee et al., ICML 2025, and its code",
        "spinup_tf2.algos.sac.simbav2", "SimbaV2ActorCritic", "simbav2_losses",
        returns="ScaledRewards", lr_end=5e-5, entropy_scale=0.5,
        defaults=dict(gamma=0.995, lr=1e-4, alpha="auto_0.01", batch_size=256,
                      start_steps=5000, update_after=5000, normalize_obs=True,
                      updates_per_step=2),
        refuses=("her", "n_sampled_goal", "goal_selection_strategy"),
        arg_docs=dict(
            ac_kwargs="The actor-critic's own settings: ``hidden_sizes`` (the actor's "
                      "residual blocks, one width each, all equal: (128,)), "
                      "``critic_hidden_sizes`` (each critic's: (512, 512)) and ``num_bins`` "
                      "(101), the paper's.",
            gamma="0.995: the paper's horizon rule, clip((H/5 - 1) / (H/5), 0.95, 0.995) "
                  "for episodes of H steps, at H = 1000.",
            lr="1e-4 at the start, decaying linearly to 5e-5 over the run's updates "
               "(the policy's, the critics' and alpha's), SimbaV2's.",
            alpha="``'auto_0.01'`` (learned from 0.01 towards ``target_entropy``, by "
                  "default -dim(A)/2, SimbaV2's), or a fixed entropy weight.",
            batch_size="256, SimbaV2's.",
            start_steps="5,000 uniformly random actions first, SimbaV2's.",
            update_after="5,000, SimbaV2's: the updates start with the policy.",
            normalize_obs="True: observations normalised by their running mean and "
                          "variance, SimbaV2's.",
            updates_per_step="2, the update-to-data ratio of SimbaV2's headline results "
                             "(1 halves the cost)."),
        evidence=Evidence(("HalfCheetah-v5", "Hopper-v5"), published_as="SimbaV2 (UTD 2)")),
)

MEMBERS: dict[str, Member] = {m.name: m for m in FAMILY}
# What no member takes: every one reads vector observations with its own MLP actor-critic.
REFUSED_SWITCHES = ("pixels", "recurrent")
# The family's names as their papers write them, by command name.
FAMILY_NAMES: dict[str, str] = {m.name: m.title for m in FAMILY}
# Every command that trains: SAC, then the family.
ALGORITHMS: tuple[str, ...] = ("sac", *MEMBERS)


def member_defaults(member: Member) -> dict:
    """``{argument: default}`` of ``member``'s function: ``sac()``'s, less what it refuses,
    with its own defaults and its name as ``actor_critic``."""
    out = {a.name: a.default for a in SAC_ARGS if a.name not in ("env_fn", *member.refuses)}
    return dict(out, actor_critic=member.name, **member.defaults)


def signature(member: Member) -> inspect.Signature:
    """``member``'s function's signature: ``sac()``'s arguments in ``sac()``'s order."""
    defaults = member_defaults(member)
    params = [inspect.Parameter("env_fn", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=v)
               for k, v in defaults.items()]
    return inspect.Signature(params)


def _paragraph(name: str, kind: str, text: str) -> str:
    """One ``Args:`` entry in Spinning Up's layout, wrapped at 78 columns."""
    import textwrap

    head = f"{name} ({kind}): " if kind else f"{name}: "
    return textwrap.fill(head + text, 78, initial_indent=" " * 8,
                         subsequent_indent=" " * 12)


def docstring(member: Member) -> str:
    """``member``'s function's docstring, in Spinning Up's layout (indented as in a
    source file: the launcher's ``--help`` reads it as it reads ``sac()``'s)."""
    import textwrap

    kinds = {a.name: a.kind for a in SAC_ARGS}
    m = member
    body = textwrap.fill(
        f"{m.how} Everything else is :func:`spinup_tf2.algos.sac.sac.sac`, whose arguments "
        f"these are; the defaults that differ from SAC's are {m.title}'s ({m.sources}).",
        74, initial_indent=" " * 4, subsequent_indent=" " * 4)
    args = [_paragraph("env_fn", "", "Makes one environment; vector observations (a 1-D "
                                     "Box, or a Dict of them) and Box actions only."),
            _paragraph("actor_critic", "", f"``'{m.name}'`` (its :class:`~{m.math}."
                                           f"{m.actor_critic}`), or a class whose "
                                           f"``variant`` is ``'{m.name}'``.")]
    args += [_paragraph(k, kinds[k] if kinds[k] in ("int", "float", "dict") else "", text)
             for k, text in m.arg_docs.items()]
    rest = "Every other argument: as :func:`~spinup_tf2.algos.sac.sac.sac`, with its default."
    if m.refuses:
        rest += " " + ", ".join(f"``{k}``" for k in m.refuses) + " does not apply" + (
            " (no target networks)." if "polyak" in m.refuses else ".")
    args.append(textwrap.fill(rest, 78, initial_indent=" " * 8, subsequent_indent=" " * 8))
    title = textwrap.fill(f"{m.title}: {m.summary}", 78, initial_indent=" " * 4,
                          subsequent_indent=" " * 4)
    return ("\n" + title + "\n\n" + body + "\n\n    Args:\n"
            + "\n\n".join(args) + "\n\n    Returns:\n        The trained actor-critic.\n    ")
