"""spinup_tf2: OpenAI Spinning Up's Soft Actor-Critic in TensorFlow 2 / Keras 3."""

from setuptools import find_packages, setup

setup(
    name="spinup_tf2",
    version="0.1.0",
    description="Spinning Up's Soft Actor-Critic (SAC) in TensorFlow 2 / Keras 3, fast on CPUs.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["spinup_tf2", "spinup_tf2.*"]),
    package_data={"spinup_tf2": ["data/*.csv"]},
    install_requires=[
        "tensorflow>=2.16",
        "keras>=3",
        "gymnasium>=1.0",
        "numpy",
        "joblib",
        "cloudpickle",
        "psutil",
        "tqdm",
        "tensorboard",  # tf.summary needs it for logger_kwargs=dict(tensorboard=True)
        "matplotlib",
        "pandas",
        "seaborn",
    ],
    extras_require={
        "mujoco": ["gymnasium[mujoco]>=1.0"],
        "mpi": ["mpi4py", "mpich"],
        "video": ["imageio", "imageio-ffmpeg", "gymnasium[classic-control]>=1.0"],
        "export": ["tf2onnx", "onnxruntime", "ai-edge-litert"],
        "ray": ["ray>=2.9"],
        "test": ["pytest", "pytest-xdist", "ruff", "gymnasium[mujoco]>=1.0", "mpi4py", "mpich",
                 "nbclient", "nbformat", "ipykernel", "imageio", "imageio-ffmpeg",
                 "gymnasium[classic-control]>=1.0", "tf2onnx", "onnxruntime", "ai-edge-litert",
                 "ray>=2.9"],
    },
)
