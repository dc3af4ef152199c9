"""What a launched experiment process runs: ``python -m spinup_tf2.launch.entrypoint
<file>``, where <file> holds the experiment function, cloudpickled and zlib-compressed by
:func:`spinup_tf2.launch.processes.experiment_command`."""

import sys
import zlib

if __name__ == "__main__":
    import cloudpickle

    from spinup_tf2.errors import cli_main
    from spinup_tf2.lifetime import die_with_parent, interrupt_once, was_interrupted
    from spinup_tf2.tf_setup import import_keras_without_extras

    import_keras_without_extras()

    die_with_parent()  # a killed launcher takes its experiment with it
    interrupt_once()
    with open(sys.argv[1], "rb") as f:
        data = zlib.decompress(f.read())
    if b"tensorflow" in data or b"keras" in data:
        # Unpickling a grid value such as tf.nn.tanh would import TensorFlow itself: with
        # its start-up notes on stderr, and without the thread settings import_tensorflow
        # makes (which do nothing once TensorFlow is in). So import it that way first.
        from spinup_tf2.tf_setup import import_tensorflow

        import_tensorflow()
    thunk = cloudpickle.loads(data)
    # The launcher says where the data is after Ctrl-C; sac()'s stop on NaN says what is intact.
    try:
        code = cli_main(thunk)
    except Exception:
        if not was_interrupted():
            raise
        code = 130  # the Ctrl-C, come out of a C++ extension as another exception
    sys.exit(code)
