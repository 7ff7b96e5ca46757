from setuptools import setup

setup(
    name="deepsurv",
    version="0.2.1",
    packages=["deepsurv"],
    install_requires=[
        "theano",
        "lasagne",
        "lifelines",
    ],
)
