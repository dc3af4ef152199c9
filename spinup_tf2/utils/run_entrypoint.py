"""What a launched experiment process runs: ``python run_entrypoint.py <thunk>``,
where <thunk> is the experiment function, cloudpickled, zlib-compressed and
base64-encoded by :func:`spinup_tf2.utils.run_utils.call_experiment`."""

import base64
import sys
import zlib

if __name__ == "__main__":
    import cloudpickle

    from spinup_tf2.utils.errors import SpinupError, print_error
    from spinup_tf2.utils.lifetime import die_with_parent, interrupt_once

    die_with_parent()  # a killed launcher takes its experiment with it
    interrupt_once()
    thunk = cloudpickle.loads(zlib.decompress(base64.b64decode(sys.argv[1])))
    try:
        thunk()
    except SpinupError as err:
        print_error(err)
        sys.exit(2)
    except FloatingPointError as err:  # sac()'s stop on NaN: its message says what is intact
        print_error(err)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)  # the launcher says where the data is
