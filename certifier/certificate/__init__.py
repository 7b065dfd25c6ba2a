"""The certificate as a document: claim, predicate (formats v1-v3), envelope (DSSE/in-toto), keys (Ed25519)."""
