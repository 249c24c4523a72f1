"""The data layer: every loader, one registry, and key-file I/O. Imports only model and errors.

`registry` resolves a name to a Dataset or an AuditCorpus; `paths` says where committed keys and
the shared data live; `keyfile` writes and reads versioned, hashed keys. Loaders: `locomo`
(+ `errata`, applied at load time), `twist_cs`, `twist_locomo`, `twist_b`, `longmemeval`,
`beam`, `demo`.
"""
