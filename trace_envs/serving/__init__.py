"""Serving: an env over HTTP / WebSocket for remote rollout workers (`trace-envs serve`), and its client.

- `server`: OpenEnv's server around `gym.make(env_id)`, one env instance per session (`make_server`, `serve`).
- `guard`: what stands between the server and its clients (origin, content type, body and frame bounds, idle timeout;
  `ServeLimits`).
- `remote`: `RemoteEnv(url)`, a Gymnasium env whose episodes run on the server, and the wire types both sides share.
- `health`: starting a local server (a free port, waiting for `/health`); no extra needed.

`server` and `remote` need the `serve` extra (openenv-core), so nothing is imported here: import the module you use.
"""
