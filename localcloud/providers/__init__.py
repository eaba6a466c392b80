"""Each provider kind's local fake, ``<kind>.py``: what stands in for its provider on this machine.

Every one has ``patches(clock)``, which the :class:`~localcloud.provider_clock.ProviderClock` installs
while it is entered: the moto methods its jobs are read through, and their replacements (a kind moto does
not simulate declares none)."""
