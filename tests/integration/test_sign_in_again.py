"""A client signed in through the stack's app client outlives its ID token. Cognito's last an hour and the
real loop runs longer, so the demo user's client asks for a new one with its refresh token when the API
answers 401, and carries on."""

from __future__ import annotations

import time

import pytest

from cli.api_client import Api
from cli.local import demo_password, sign_in_demo_user
from localcloud.cloud import LocalCloud

AN_HOUR_AND_A_MINUTE_S = 3660


def test_the_demo_users_client_signs_in_again_once_its_id_token_has_expired(
    api_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the demo user, signed in, whose client the API answers
    signed_in = sign_in_demo_user(api_cloud, demo_password())
    with api_cloud.serve_api(access_log=False) as server:
        api = signed_in.api(server.url)
        assert api.call("GET", "/connections")[0] == 200

        # When an hour and a minute have passed (the clock every token check and every new token reads)
        later = time.time() + AN_HOUR_AND_A_MINUTE_S
        monkeypatch.setattr(time, "time", lambda: later)

        # Then the token it was given is refused
        assert Api(server.url, signed_in.id_token).call("GET", "/connections")[0] == 401
        # and its client, given a new token for the refresh token, is answered
        assert api.call("GET", "/connections")[0] == 200
        assert api.token != signed_in.id_token
