"""`python -m trace_envs ...` runs the `trace-envs` CLI (and so do `torchrun -m trace_envs` and
`accelerate launch -m trace_envs`)."""

from trace_envs.cli import main

if __name__ == "__main__":
    main()
