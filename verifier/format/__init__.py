"""The certificate's bytes: strict JSON, the DSSE envelope, the statement and one module per format version."""
