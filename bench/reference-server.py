"""Start the reference OpenHands app server (openhands-ai from PyPI) for the bench.

Run it with the python that scripts/setup-reference-server.sh prints:

    PY=$(bash scripts/setup-reference-server.sh | tail -n1)
    "$PY" bench/reference-server.py --port 3901

What it changes, all at run time (the installed package is never edited):
- the app's hard-coded per-IP rate limiter (10 req/s, then 1 s delays, then 429) is removed
  from the middleware list before the first request builds the stack, so the bench measures
  the server rather than its limiter; start-up fails if that middleware is not found;
- a throw-away persistence directory (settings, secrets, its SQLite database, JWT keys) is
  created and removed on exit, unless --data-dir is given;
- everything that would reach the network is switched off: litellm's model-price download at
  import, serving a frontend, analytics (never initialised by the OSS app, asserted below).

Prints "reference-server: ready http://HOST:PORT" on stdout once it answers /alive.
See docs/reference-server-notes.md for its endpoints and quirks.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--data-dir", help="persistence directory to use and keep (default: a temporary one)")
    parser.add_argument(
        "--session-api-key",
        help="require this X-Session-API-Key on the API (default: none, as the OSS app ships)",
    )
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    return parser.parse_args()


def quiet_environment(data_dir: str, args: argparse.Namespace) -> None:
    """Environment read by openhands at import time, so it is set before the import."""
    os.environ["OH_PERSISTENCE_DIR"] = data_dir
    os.environ["SERVE_FRONTEND"] = "false"
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # else litellm fetches prices from the internet
    os.environ["LOG_LEVEL"] = args.log_level.upper()
    os.environ["OPENHANDS_SUPPRESS_BANNER"] = "1"
    os.environ.setdefault("RUNTIME", "process")  # no Docker daemon on this machine
    for name in ("TAVILY_API_KEY", "SEARCH_API_KEY", "LLM_BASE_URL", "OPENHANDS_PROVIDER_BASE_URL", "WEB_HOST"):
        os.environ.pop(name, None)
    if args.session_api_key:
        os.environ["SESSION_API_KEY"] = args.session_api_key
    else:
        os.environ.pop("SESSION_API_KEY", None)


def remove_rate_limiter(app) -> None:
    from openhands.app_server.middleware import RateLimitMiddleware

    kept = [m for m in app.user_middleware if m.cls is not RateLimitMiddleware]
    if len(kept) != len(app.user_middleware) - 1:
        sys.exit("reference-server: expected exactly one RateLimitMiddleware in the app; this openhands-ai differs")
    app.user_middleware = kept
    app.middleware_stack = None  # built lazily on the first request; make sure it is rebuilt without it


def assert_no_analytics() -> None:
    from openhands.analytics import get_analytics_service

    if get_analytics_service() is not None:
        sys.exit("reference-server: analytics is initialised; it would send events to its host")


async def announce_when_alive(host: str, port: int) -> None:
    import httpx

    url = f"http://{host}:{port}/alive"
    async with httpx.AsyncClient(timeout=1.0) as client:
        for _ in range(600):
            try:
                if (await client.get(url)).status_code == 200:
                    print(f"reference-server: ready http://{host}:{port}", flush=True)
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    print("reference-server: /alive did not answer within 60 s", file=sys.stderr, flush=True)


def main() -> None:
    args = parse_args()
    owned_dir = None if args.data_dir else tempfile.mkdtemp(prefix="reference-server-")
    data_dir = args.data_dir or owned_dir
    quiet_environment(data_dir, args)
    try:
        import uvicorn
        from openhands.app_server.app import app

        remove_rate_limiter(app)
        assert_no_analytics()

        # uvicorn re-raises SIGTERM after its graceful shutdown; with the default handler that
        # would end the process before the temporary directory is removed below.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
        server = uvicorn.Server(config)

        async def serve() -> None:
            announcer = asyncio.create_task(announce_when_alive(args.host, args.port))
            try:
                await server.serve()
            finally:
                announcer.cancel()

        asyncio.run(serve())
    finally:
        if owned_dir:
            shutil.rmtree(owned_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
