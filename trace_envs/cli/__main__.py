"""`python -m trace_envs.cli ...` runs the `trace-envs` CLI."""

from trace_envs.cli import main

if __name__ == "__main__":
    main()
