"""Train a small model on scikit-learn's digits (offline) with Opacus 1.6 at a certified sigma.

    python examples/opacus_digits.py [--certificate artifacts/certificates/M100_E10.json]
                                     [--key artifacts/keys/public.pem] [-o build/opacus-digits]
                                     [--clip 1.0] [--lr 0.25] [--seed S] [--json]
                                     [--release RELEASE_PRIVATE.pem [--card]]
    python examples/opacus_digits.py --epsilon 1 --delta 1e-5 [--steps 100 --epochs 10] [-o DIR] [--json]

The second form is Opacus's own calibration: `PrivacyEngine(accountant="random_allocation")
.make_private_with_epsilon(..., poisson_sampling=False)` with `sigmacert.torch.random_allocation_loader`
(Algorithm 1's batches, one epoch per pass) picks the sigma for (eps, delta)-DP of the pair (numerical,
the exact sigma within Opacus's bisection tolerance; docs/targets.md), trains E epochs and reports
`get_epsilon(delta)` from the accountant's history; it writes DIR/epsilon-run.json.

`sigmacert.torch.make_private` verifies the certificate with the independent verifier, takes M, E
and sigma from it and wires Opacus (Algorithm 1: random allocation, N(0, sigma^2 C^2 I) noise on
every one of the E*M steps, empty ones included, divided by B0 = N0/M).  One pass over the loader
is the whole run.  The release (model.npy, certificate.json, release.json) is written by
trainer.release.write_release, as `sigmacert train` does; with --release the directory is then sealed
(trainer.seal: signed training manifest, model card, OpenSSF model-signing signature; docs/release.md).
`make example-opacus` runs it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import TensorDataset

from sigmacert.cli import exit_code
from sigmacert.errors import SigmacertError
from sigmacert.torch import make_private
from trainer import data
from trainer.release import dataset_digest, run_record, seed_commitment, write_release

ROOT = Path(__file__).resolve().parent.parent


def mlp(features: int, classes: int) -> nn.Module:
    """64 -> 32 -> 10 with tanh: no layer mixes the records of a step (Section 2)."""
    return nn.Sequential(nn.Linear(features, 32), nn.Tanh(), nn.Linear(32, classes))


def flat_parameters(model: nn.Module) -> np.ndarray:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double().numpy()


def run(certificate: str, key: str, outdir: str, clip: float = 1.0, lr: float = 0.25, seed=None,
        release_key: str | None = None, card: bool = False) -> dict:
    """Verify, train with Opacus, write the release; returns the manifest."""
    start = time.perf_counter()
    ds = data.load("digits")
    train = TensorDataset(torch.tensor(ds.X_train, dtype=torch.float32), torch.tensor(ds.y_train))
    model = mlp(ds.n_features, ds.n_classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    model, optimizer, loader = make_private(model, optimizer, train, certificate=certificate, public_key=key,
                                            clip_norm=clip, seed=seed)
    criterion = nn.CrossEntropyLoss()
    updates = 0
    for x, y in loader:          # the whole run: E*M steps; an empty batch still adds noise and steps
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
        updates += 1
    net = model._module
    with torch.no_grad():
        pred = net(torch.tensor(ds.X_test, dtype=torch.float32)).argmax(dim=1).numpy()
    accuracy = float((pred == ds.y_test).mean())
    run_ = loader.run
    sampler = loader.batch_sampler
    training = {"algorithm": "Algorithm 1 (DP-SGD, random allocation) via Opacus 1.6", "steps": run_.steps,
                "epochs": run_.epochs, "sigma": run_.sigma_text, "sigma_float": repr(run_.sigma),
                "n0": sampler.n0, "clip": clip, "b0": sampler.b0, "optimizer": "sgd", "lr": lr,
                "updates": updates, "empty_steps": sampler.empty_steps,
                "optimizer_steps_counted": loader.accountant.steps}
    commitment, _ = seed_commitment(None)   # the sampler's seed is not kept: nothing to commit to
    if seed is not None:
        commitment = {"scheme": "none", "note": "a seed given on the command line (not secret, not committed)"}
    training["run"] = run_record(run_.claim, scheme="random-allocation", sampler="sigmacert.torch."
                                 "RandomAllocationBatchSampler (Algorithm 1 lines 2-4)", n0=sampler.n0, b0=sampler.b0,
                                 updates=updates, empty_steps=sampler.empty_steps, commitment=commitment)
    manifest = write_release(
        outdir, theta=flat_parameters(net), cert_bytes=Path(certificate).read_bytes(),
        claim=dict(run_.claim, keyid=run_.keyid),
        model={"architecture": "mlp-64-32-10-tanh (torch)", "parameters": sum(p.numel() for p in net.parameters()),
               "features": ds.n_features, "classes": ds.n_classes},
        training=training, dataset={"name": "digits", "size": len(train), "test_size": len(ds.X_test),
                                    "sha256": dataset_digest(ds.X_train, ds.y_train)},
        test_accuracy=accuracy)
    if release_key is not None:
        from trainer.seal import seal
        manifest["sealed"] = seal(outdir, certificate=certificate, key=release_key, card=card)
    return dict(manifest, seconds=round(time.perf_counter() - start, 2))


def run_epsilon(epsilon: float, delta: float, steps: int, epochs: int, outdir: str, clip: float = 1.0,
                lr: float = 0.25, seed=None) -> dict:
    """Opacus's make_private_with_epsilon with the random_allocation accountant; returns the manifest."""
    from opacus import PrivacyEngine

    from sigmacert.torch import random_allocation_loader
    start = time.perf_counter()
    ds = data.load("digits")
    train = TensorDataset(torch.tensor(ds.X_train, dtype=torch.float32), torch.tensor(ds.y_train))
    model = mlp(ds.n_features, ds.n_classes)
    loader = random_allocation_loader(train, steps, epochs, seed=seed)
    engine = PrivacyEngine(accountant="random_allocation")
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=lr), data_loader=loader,
        target_epsilon=epsilon, target_delta=delta, epochs=epochs, max_grad_norm=clip, poisson_sampling=False,
        epsilon_tolerance=1e-4)
    optimizer.expected_batch_size = loader.batch_sampler.b0   # line 7: divide by the public B0 = N0/M
    criterion = nn.CrossEntropyLoss()
    for _ in range(epochs):
        for x, y in loader:      # one epoch per pass; an empty batch still adds noise and steps
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    net = model._module
    with torch.no_grad():
        pred = net(torch.tensor(ds.X_test, dtype=torch.float32)).argmax(dim=1).numpy()
    manifest = {"algorithm": "Algorithm 1 (DP-SGD, random allocation) via Opacus 1.6, accountant random_allocation",
                "target_epsilon": epsilon, "target_delta": delta, "steps": steps, "epochs": epochs,
                "sigma": optimizer.noise_multiplier, "updates": len(engine.accountant),
                "empty_steps": loader.batch_sampler.empty_steps, "epsilon_spent": engine.get_epsilon(delta),
                "clip": clip, "lr": lr, "test_accuracy": float((pred == ds.y_test).mean()),
                "seconds": round(time.perf_counter() - start, 2)}
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "epsilon-run.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--certificate", default=str(ROOT / "artifacts/certificates/M100_E10.json"))
    ap.add_argument("--key", default=str(ROOT / "artifacts/keys/public.pem"), help="issuer's public key (PEM)")
    ap.add_argument("-o", "--output", default=str(ROOT / "build/opacus-digits"), help="release directory")
    ap.add_argument("--clip", type=float, default=1.0, help="clipping norm C")
    ap.add_argument("--lr", type=float, default=0.25, help="SGD learning rate")
    ap.add_argument("--seed", type=int, default=None, help="allocation seed (default: a secret one)")
    ap.add_argument("--json", action="store_true", help="print the manifest as JSON")
    ap.add_argument("--release", metavar="PRIVATE.pem", help="seal the release with this ECDSA key (docs/release.md)")
    ap.add_argument("--card", action="store_true", help="with --release: also a Hugging Face model card")
    ap.add_argument("--epsilon", type=float, help="calibrate with Opacus to (eps, delta) instead of a certificate")
    ap.add_argument("--delta", type=float, default=1e-5, help="delta of the --epsilon run")
    ap.add_argument("--steps", type=int, default=100, help="steps per epoch M of the --epsilon run")
    ap.add_argument("--epochs", type=int, default=10, help="epochs E of the --epsilon run")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)   # batches of ~N0/M records: one intra-op thread is the fastest
    if args.epsilon is not None:
        try:
            m = run_epsilon(args.epsilon, args.delta, args.steps, args.epochs, args.output, args.clip, args.lr,
                            args.seed)
        except (SigmacertError, ValueError) as err:
            print(f"opacus_digits: error: {err}", file=sys.stderr)
            return 2
        print(json.dumps(m, indent=2, sort_keys=True) if args.json else
              f"trained {m['updates']} steps (M={m['steps']}, E={m['epochs']}, {m['empty_steps']} empty) at "
              f"sigma={m['sigma']:.6f} calibrated by Opacus for ({m['target_epsilon']}, {m['target_delta']})-DP: "
              f"get_epsilon = {m['epsilon_spent']:.6f}, test accuracy {m['test_accuracy']:.4f} in {m['seconds']} s")
        return 0
    try:
        m = run(args.certificate, args.key, args.output, args.clip, args.lr, args.seed, args.release, args.card)
    except SigmacertError as err:
        print(f"opacus_digits: error: {err}", file=sys.stderr)
        return exit_code(err)
    if args.json:
        print(json.dumps(m, indent=2, sort_keys=True))
    else:
        t = m["training"]
        print(f"trained {t['updates']} steps (M={t['steps']}, E={t['epochs']}, {t['empty_steps']} empty) at "
              f"sigma={t['sigma']}, C={t['clip']}, B0={t['b0']:.4g}: test accuracy {m['test_accuracy']:.4f} "
              f"in {m['seconds']} s")
        print(f"release written to {args.output} (certificate {m['certificate']['sha256'][:16]}..., "
              f"model {m['model']['sha256'][:16]}...)")
        if "sealed" in m:
            print(f"sealed: certificate, release.dsse.json{', README.md' if args.card else ''} and model.sig "
                  f"(release key id {m['sealed']['release_keyid'][:16]}...)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
