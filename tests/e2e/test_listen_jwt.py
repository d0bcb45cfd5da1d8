"""JWT access tokens through `policy gateway --listen --clients`: tokens
signed by an EC key each test makes (PyJWT, cryptography), their keys given
to the gateway as a JWKS file and as a JWKS served on 127.0.0.1 by the test;
the official Python MCP client over streamable HTTP in both eras, each
caller seeing the list and the refusals its claims give it, and raw HTTP
for what a refused request gets.

Run with the venv tests/e2e/install made (tests/e2e/run runs these too):
    target/e2e/venv/bin/python tests/e2e/test_listen_jwt.py [-k PATTERN]
"""

from __future__ import annotations

import contextlib
import http.server
import json
import sys
import threading
import time
import unittest

import harness
from harness import LEGACY, MODERN
from test_gateway import listed, outcome
from test_listen import Case, http_client, listening, post, tools_list

ISSUER = "https://id.example.com"
# The least time between two fetches of a `jwks_url`, in seconds.
PAUSE = 60
AUDIENCE = "toolpolicy"

# Two modes; `readonly` hides the echo tool wherever it is set.
POLICY = """\
NoDefer(everything__echo)
Hide(everything__get-env)
Defer(*)
mode view {
}
mode ops {
  NoDefer(everything__get-sum)
}
when readonly {
  Hide(everything__echo)
}
"""


class Issuer:
    """A signing key of an identity provider the test plays."""

    def __init__(self, kid: str):
        from cryptography.hazmat.primitives.asymmetric import ec

        self.key = ec.generate_private_key(ec.SECP256R1())
        self.kid = kid

    def jwk(self) -> dict:
        from jwt.algorithms import ECAlgorithm

        jwk = json.loads(ECAlgorithm.to_jwk(self.key.public_key()))
        jwk.update(kid=self.kid, alg="ES256", use="sig")
        return jwk

    def token(self, sub: str, **claims) -> str:
        import jwt

        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 600}
        body.update(claims)
        return jwt.encode(body, self.key, algorithm="ES256", headers={"kid": self.kid})


def jwks(*issuers: Issuer) -> str:
    return json.dumps({"keys": [i.jwk() for i in issuers]})


@contextlib.contextmanager
def jwks_server(body: str):
    """A JWKS served on 127.0.0.1; yields `(url, state)`: `state["body"]`
    is what it serves next, `state["hits"]` how often it was asked."""
    state = {"body": body, "hits": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the standard library's name)
            state["hits"] += 1
            data = state["body"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def clients_file(work, jwt_source: dict) -> list[str]:
    """Writes `clients.json` with JWTs from `jwt_source` (`jwks_file` or
    `jwks_url`); the gateway's arguments for it (the command line's mode is
    `view`, as the file's default is)."""
    (work / "clients.json").write_text(json.dumps({
        "jwt": {"issuer": ISSUER, "audience": AUDIENCE, **jwt_source,
                "claims": {"mode": ["tp", "mode"], "flags": "tp_flags"},
                "defaults": {"mode": "view"}},
        "authorization_servers": [ISSUER],
    }, indent=2))
    return ["--clients", str(work / "clients.json"), "--mode", "view"]


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


class Eras:
    async def test_each_caller_sees_what_its_claims_give_it(self):
        key = Issuer("k1")
        (self.work.path / "jwks.json").write_text(jwks(key))
        args = clients_file(self.work.path, {"jwks_file": "jwks.json"})
        servers = harness.real_servers(self.work.path, ["everything"])
        with listening(self.work.path, servers, POLICY, args) as (url, _, _):
            alice = key.token("alice", tp={"mode": "ops"}, tp_flags=["readonly"])
            bob = key.token("bob")
            async with http_client(url, self.era, bearer(alice)) as a, \
                    http_client(url, self.era, bearer(bob)) as b:
                seen_a, seen_b = await listed(a), await listed(b)
                # alice: mode ops (its claim), readonly: no echo, get-sum active.
                self.assertNotIn("everything__echo", seen_a)
                self.assertIn("everything__get-sum", seen_a)
                # bob: the default mode, no flags.
                self.assertIn("everything__echo", seen_b)
                self.assertNotIn("everything__get-sum", seen_b)
                self.assertFalse((await outcome(a, "everything__echo", {"message": "x"}))[0])
                ok, echoed = await outcome(b, "everything__echo", {"message": "from bob"})
                self.assertTrue(ok, echoed)
                self.assertIn("from bob", echoed)
                for client in (a, b):
                    self.assertFalse((await outcome(client, "everything__get-env", {}))[0])

    async def test_a_mode_the_policy_does_not_declare_lists_and_calls_nothing(self):
        from mcp.shared.exceptions import MCPError

        key = Issuer("k1")
        (self.work.path / "jwks.json").write_text(jwks(key))
        args = clients_file(self.work.path, {"jwks_file": "jwks.json"})
        servers = harness.real_servers(self.work.path, ["everything"])
        with listening(self.work.path, servers, POLICY, args) as (url, _, _):
            token = key.token("mallory", tp={"mode": "admin"})
            with self.assertRaises((MCPError, RuntimeError, ExceptionGroup)) as refused:
                async with http_client(url, self.era, bearer(token)) as client:
                    await listed(client)
            self.assertIn("no mode `admin`", str(refused.exception) + repr(refused.exception))
            ok, text = await outcome_as(url, self.era, token, "everything__echo", {"message": "x"})
            self.assertFalse(ok, text)


async def outcome_as(url: str, era: str, token: str, name: str, arguments: dict):
    """A call by a fresh client with `token`; a client that cannot even
    start counts as refused."""
    try:
        async with http_client(url, era, bearer(token)) as client:
            return await outcome(client, name, arguments)
    except Exception as e:  # noqa: BLE001 (any failure is a refusal here)
        return False, repr(e)


class LegacyEra(Eras, Case):
    era = LEGACY


class ModernEra(Eras, Case):
    era = MODERN


class Refused(Case):
    def test_a_request_without_an_accepted_token_gets_401_and_the_metadata(self):
        import httpx2
        import jwt

        key, stranger = Issuer("k1"), Issuer("k1")
        (self.work.path / "jwks.json").write_text(jwks(key))
        args = clients_file(self.work.path, {"jwks_file": "jwks.json"})
        servers = harness.real_servers(self.work.path, ["everything"])
        with listening(self.work.path, servers, POLICY, args) as (url, _, _):
            self.assertEqual(post(url, tools_list(), bearer(key.token("ok"))).status_code, 200)
            missing = post(url, tools_list())
            self.assertEqual(missing.status_code, 401)
            challenge = missing.headers["www-authenticate"]
            self.assertTrue(challenge.startswith('Bearer resource_metadata="'), challenge)
            self.assertNotIn("error=", challenge)
            metadata_url = challenge.split('"')[1]
            metadata = httpx2.get(metadata_url, timeout=harness.CALL_TIMEOUT).json()
            self.assertEqual(metadata["authorization_servers"], [ISSUER])
            self.assertEqual(metadata["bearer_methods_supported"], ["header"])
            self.assertEqual(metadata["resource"], url)

            now = int(time.time())
            unsigned = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "sub": "eve", "exp": now + 600},
                                  None, algorithm="none", headers={"kid": "k1"})
            bad = {
                "expired": key.token("eve", exp=now - 3600),
                "not yet valid": key.token("eve", nbf=now + 3600),
                "another issuer": key.token("eve", iss="https://evil.example"),
                "another audience": key.token("eve", aud="someone-else"),
                "another key, same kid": stranger.token("eve"),
                "alg none": unsigned,
                "a mode that is a number": key.token("eve", tp={"mode": 3}),
                "not a token": "nonsense",
            }
            answers = {}
            for what, token in bad.items():
                answer = post(url, tools_list(), bearer(token))
                self.assertEqual(answer.status_code, 401, what)
                answers[what] = (answer.headers["www-authenticate"], answer.text)
            # Every refusal is the same answer: nothing says why.
            self.assertEqual(len(set(answers.values())), 1, answers)
            only = next(iter(answers.values()))[0]
            self.assertEqual(only, f'{challenge}, error="invalid_token"')


class FromAUrl(Case):
    def test_keys_fetched_from_a_loopback_url_are_cached_and_follow_a_rotation(self):
        first, second = Issuer("first"), Issuer("second")
        with jwks_server(jwks(first)) as (jwks_url, state):
            args = clients_file(self.work.path, {"jwks_url": jwks_url})
            servers = harness.real_servers(self.work.path, ["everything"])
            with listening(self.work.path, servers, POLICY, args) as (url, _, _):
                self.assertEqual(state["hits"], 0)
                token = first.token("alice", tp={"mode": "ops"})
                self.assertEqual(post(url, tools_list(), bearer(token)).status_code, 200)
                fetched = time.monotonic()
                self.assertEqual(post(url, tools_list(), bearer(token)).status_code, 200)
                self.assertEqual(state["hits"], 1)
                # The issuer adds a key. Tokens with a kid the keys lack fetch
                # them again, but not more than once a minute, whatever the
                # tokens say: until then they are refused, without a fetch.
                state["body"] = jwks(first, second)
                for _ in range(3):
                    answer = post(url, tools_list(), bearer(second.token("bob")))
                    self.assertEqual(answer.status_code, 401, answer.text)
                self.assertEqual(state["hits"], 1)
                time.sleep(max(0.0, fetched + PAUSE + 1 - time.monotonic()))
                answer = post(url, tools_list(), bearer(second.token("bob")))
                self.assertEqual(answer.status_code, 200, answer.text)
                self.assertEqual(state["hits"], 2)
                self.assertEqual(post(url, tools_list(), bearer(token)).status_code, 200)


if __name__ == "__main__":
    sys.exit(harness.main(sys.modules[__name__]))
