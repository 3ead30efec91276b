"""The slim verifier distribution `tinyrustlm-verify`: its build config and PEP 517 backend."""
