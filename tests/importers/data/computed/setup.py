from pathlib import Path

from setuptools import setup


def requirements():
    return Path("requirements.in").read_text().splitlines()


setup(name="computed", install_requires=requirements(), python_requires=">=3.5")
