"""A small task with image observations, for the pixel tests: a dot on a dark square."""

import gymnasium as gym
import numpy as np


class DotToCentre(gym.Env):
    """A point in [-1, 1]^2, seen only as a 3x3 white dot on a ``size`` x ``size`` RGB
    image; each action (in [-1, 1]^2) moves it by ``0.15 * action``; the reward is minus
    its distance from the centre; episodes last 40 steps. A random policy scores about
    -30, one that goes straight to the centre about -6."""

    def __init__(self, size: int = 24):
        self.size = size
        self.observation_space = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.pos, self.t = np.zeros(2), 0

    def _obs(self) -> np.ndarray:
        img = np.zeros((self.size, self.size, 3), np.uint8)
        r, c = np.round((self.pos + 1) / 2 * (self.size - 3)).astype(int)
        img[r:r + 3, c:c + 3] = 255
        return img

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = self.np_random.uniform(-1, 1, 2), 0
        return self._obs(), {}

    def step(self, action):
        self.pos = np.clip(self.pos + 0.15 * np.clip(action, -1, 1), -1, 1)
        self.t += 1
        return self._obs(), -float(np.linalg.norm(self.pos)), False, self.t >= 40, {}
