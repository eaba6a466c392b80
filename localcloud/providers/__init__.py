"""Each provider kind's local fake, ``<kind>.py``: what stands in for its provider on this machine.

Every one has ``install(clock)``, which the :class:`~localcloud.provider_clock.ProviderClock` calls to
replace the moto methods its jobs are read through (a kind moto does not simulate installs nothing)."""
