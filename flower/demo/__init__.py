"""What ``flower demo`` plays the model with, below the CLI so Python reaches it too.

:mod:`flower.demo.scripted_api` is the fake Messages API on loopback (tests take it as
:mod:`flower.testing.fake_api`); :mod:`flower.demo.script` is the scripted model the
demo answers with. Neither is the runtime: nothing below the CLI imports this package.
"""
