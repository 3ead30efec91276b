"""The command-line shell both CLIs share (`tinyrustlm-release`, `tinyrustlm-verify`).

`commands` builds the parser from a table of commands and runs one (errors caught once,
exit codes, `--json`); `arguments` holds the flags every command or several take; `result`
the `--json` object; `terminal` colour and streams; `progress` the progress bar. It lives in
`verify/` so the slim verifier has it too: rich and argcomplete are used when installed, and
without them the output is plain.
"""
