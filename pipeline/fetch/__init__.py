"""The integrators' client: fetch a release through TUF (`client`: python-tuf's
ngclient.Updater, then `verify bundle`), its trusted state (`state`), and `cli` (`fetch`)."""
