"""The environment's home: everything about a run's environment, floor by floor.

- :mod:`~spinup_tf2.envs.platform`: is there a display, which OpenGL renders off-screen,
  is this process hosting environments for another, MuJoCo's noise;
- :mod:`~spinup_tf2.envs.dict_obs`: Dict observations as one vector, channels-first and 2-D
  images as ``(H, W, C)``;
  :mod:`~spinup_tf2.envs.action_scale`: actions with bounds of their own per dimension;
- :mod:`~spinup_tf2.envs.tasks`: the tasks registered here (the partially observed ``-P``
  tasks, the goal task ``PointReach-v0``) and on demand (DeepMind Control through Shimmy);
- :mod:`~spinup_tf2.envs.pixels`: pixel tasks (``--pixels``), the environment as its camera
  sees it;
- :mod:`~spinup_tf2.envs.trust`: what a run directory may ask a replay to build (ids,
  wrappers and their arguments, checked as data);
- :mod:`~spinup_tf2.envs.recording`: how a run's environment was made (its spec, wrappers,
  normalizing statistics) and making it again; making it first from ``env_fn``;
- :mod:`~spinup_tf2.envs.rendering`: the isolated rendering process;
  :mod:`~spinup_tf2.envs.episodes`: episodes a checkpoint rebuilds;
  :mod:`~spinup_tf2.envs.vector`: several copies stepping at once.

Each floor imports only the floors above it in this list; the rest of the package uses
them through this module (``from spinup_tf2 import envs``; ``envs.record(env)``). Runs
record the entry points ``spinup_tf2.envs:PositionOnly``, ``spinup_tf2.envs:PointReach``,
``spinup_tf2.envs:PixelObservation`` and ``spinup_tf2.envs:dm_control_suite``, which
resolve here.
"""

from spinup_tf2.envs.action_scale import ActionScale, action_scale  # noqa: F401
from spinup_tf2.envs.dict_obs import (  # noqa: F401
    DictLayout,
    ImageLayout,
    dict_layout,
    image_layout,
    observation_layout,
    readable_chain,
)
from spinup_tf2.envs.episodes import (  # noqa: F401
    ReplayableEpisodes,
    env_rng_state,
    rng_state,
    set_env_rng_state,
    set_rng_state,
    store_episode,
    success_key,
)
from spinup_tf2.envs.pixels import (  # noqa: F401
    PIXEL_WRAPPER,
    PixelObservation,
    frame_stack,
    is_pixel_ref,
    pixel_options,
    pixel_ref,
    renders_observations,
)
from spinup_tf2.envs.platform import (  # noqa: F401
    HOSTING,
    has_display,
    hosts_environments,
    quiet_mujoco,
    use_headless_gl,
)
from spinup_tf2.envs.recording import (  # noqa: F401
    STATE_KEY,
    check_first_step,
    describe,
    freeze_stats,
    make,
    make_env,
    make_named,
    network_spaces,
    policy_action_space,
    read_state,
    record,
    ref_of,
    save_state,
    set_wrapper_state,
    stats_attributes,
    with_state,
    wrapper_state,
)
from spinup_tf2.envs.rendering import (  # noqa: F401
    INSTALL_GL,
    FrameWindow,
    RenderingEnv,
    extend_floor,
    make_isolated,
    make_pixels,
    render_following,
    render_frame,
)
from spinup_tf2.envs.tasks import (  # noqa: F401
    POSITION_ONLY,
    PointReach,
    PositionOnly,
    dm_control_suite,
    ensure_registered,
    register_envs,
)
from spinup_tf2.envs.trust import (  # noqa: F401
    NOT_REPLAYED,
    REPLAYED_WRAPPERS,
    apply_wrappers,
    check_trusted,
    parse_wrappers,
    replayed,
)
from spinup_tf2.envs.vector import VectorEpisodes  # noqa: F401
