"""seed: SEED-style distributed RL with central inference over gRPC."""
import setuptools

# The learner and actor entry points live in top-level folders (as the design
# card lays out) but install under the seed namespace, not as generic names; so do the
# configs, so that `seed train toy vtrace 2 4` finds gin/toy/vtrace.gin from any folder
# (seed.config.gin_root).
PACKAGE_DIR = {'seed.learner': 'learner', 'seed.actors': 'actors', 'seed.gin': 'gin'}

setuptools.setup(
    name='seed-rl',
    version='0.1.0',
    description='SEED-style distributed RL: batched central inference over gRPC.',
    python_requires='>=3.11',
    packages=setuptools.find_packages(include=['seed', 'seed.*']) + list(PACKAGE_DIR),
    package_dir=PACKAGE_DIR,
    # seed-job makes a job's TLS files with the same script the docs show.
    package_data={'seed.cluster': ['make_certs.sh'], 'seed.gin': ['*/*.gin']},
    install_requires=[
        # Actors need only these: no TensorFlow on the actor side.
        'numpy>=1.26',
        'grpcio==1.85.1',          # pinned with grpcio-tools: generated code must match
        'protobuf>=7.35.1,<8',      # the generated modules check this at import
        # The event loop of the learner's server and of the actor (seed/process/event_loop.py).
        'uvloop>=0.19; sys_platform != "win32"',
        # mujoco adds only imageio (and mujoco>=2.1.5, which the pin below
        # narrows); box2d adds Box2D and pygame-ce (gym:LunarLander-v3).
        'gymnasium[mujoco,box2d]>=1.0,<2',
        'ale-py>=0.10',
        'opencv-python-headless',  # gymnasium's AtariPreprocessing resizes with cv2
        # dm-control 1.0.50 needs mujoco>=3.17.0, and mujoco 4.0.0 breaks its
        # suite.load ('MjModel' object has no attribute 'flex_vertedge').
        'mujoco==3.17.0',
        'dm-control==1.0.50',       # dmc:<domain>-<task>
        'dm-env',
        'gin-config>=0.5',
        'absl-py>=2.0',
    ],
    extras_require={
        # The learner: the model, training, TensorBoard and the gRPC health
        # service that Kubernetes probes (versioned with grpcio).
        'learner': ['tensorflow-cpu==2.21.0; platform_machine=="x86_64"',
                    'tensorflow==2.21.0; platform_machine!="x86_64"',
                    'tensorboard', 'grpcio-health-checking==1.85.1',
                    'cloudml-hypertune==0.1.0.dev6',  # Vertex AI tuning trials report through it
                    'zstandard>=0.23',  # the replay compresses Atari frames (seed/replay/frames.py)
                    'psutil>=5.9'],  # memory, threads and descriptors in the progress summaries
        # The same on NVIDIA GPUs: TensorFlow with its CUDA libraries from pip.
        'learner-gpu': ['tensorflow[and-cuda]==2.21.0', 'tensorboard',
                        'grpcio-health-checking==1.85.1', 'cloudml-hypertune==0.1.0.dev6',
                        'zstandard>=0.23', 'psutil>=5.9'],
        # `seed plot` draws the learning curves in docs/learning.md; `seed suite dmc15`
        # aggregates with rliable (IQM, stratified bootstrap), whose arch 7.2 fails to
        # import under pandas 3 (deprecate_kwarg() missing 'new_arg_name').
        'plots': ['matplotlib>=3.8', 'rliable==1.2.0', 'pandas>=2,<3'],
        # python -m seed.evaluate --video: MP4 through imageio's ffmpeg plugin, whose wheel
        # carries an ffmpeg binary (nothing to install beside it).
        'video': ['imageio>=2.31', 'imageio-ffmpeg>=0.5'],
        # EnvConfig.backend = 'envpool': EnvPool's C++ Atari (seed/envs/envpool_atari.py). Its
        # wheel brings every EnvPool family's assets (MuJoCo, ViZDoom, ...): about 290 MB
        # to download, 750 MB installed, for Atari alone.
        'envpool': ['envpool==1.2.5; platform_system=="Linux" and platform_machine=="x86_64"'],
        # pytest 9.2 breaks xdist's --dist=loadgroup (pytest-xdist#1386: groups silently ignored).
        'test': ['pytest>=8,<9.2', 'pytest-timeout', 'pytest-xdist>=3.5', 'grpcio-tools==1.85.1',
                 'psutil>=5.9'],  # the fault harness watches the learner's memory
    },
    entry_points={'console_scripts': [
        'seed-learner=seed.learner.main:run',
        'seed-actor=seed.actors.main:run',
        'seed-job=seed.cluster.job:run',
        'seed-k8s-check=seed.cluster.k8s_check:run',
        'seed=seed.cli:run',
    ]},
)
