"""A release's documents: the manifest, SBOM and provenance (`manifest`, `sbom`,
`provenance`), assembled by `assemble.documents_of`; DSSE signing (`sign`), signing keys
(`keys`) and rebuild attestations (`attest`)."""
