"""An append-only log of certificates: RFC 9162 Merkle tree (merkle), signed tree heads (head), a local
archive (archive). Proofs are verified by verifier.transparency (docs/release.md "The log")."""
