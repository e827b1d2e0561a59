#!/usr/bin/env bash
# Synthesize every shipped config, every pipeline file and every example through the CDK CLI, as a user types it,
# and copy each assembly's templates to OUT/<name>/ (default: synth-all/). Two runs compare with
# `cmp` file by file (`diff -r OUT1 OUT2`): a change that moves code and keeps behaviour keeps every template.
# Usage: tools/synth_all.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-synth-all}")
rm -rf "$out" && mkdir -p "$out"
export CDK_DISABLE_VERSION_CHECK=1 CDK_CLI_TELEMETRY=false
keep() {  # keep() NAME DIR: the templates and asset manifests of DIR's assembly
  mkdir -p "$out/$1"
  find "$2" -maxdepth 3 \( -name '*.template.json' -o -name '*.assets.json' \) -exec cp {} "$out/$1/" \;
}
for config in config/*.yaml config/examples/*.yaml; do
  case "$config" in *.lock.yaml|config/pipeline.yaml) continue;; esac
  name=$(basename "$config" .yaml)
  npx cdk synth --quiet --no-validation -c "config=$config" -o "$out/.cdk.out" >/dev/null 2>"$out/$name.log" \
    || { echo "synth failed: $config (see $out/$name.log)" >&2; exit 1; }
  keep "config-$name" "$out/.cdk.out"; rm -rf "$out/.cdk.out" "$out/$name.log"
done
for pipeline in config/pipeline.yaml config/examples/pipelines/*.yaml; do
  name=$(basename "$pipeline" .yaml)
  npx cdk synth --quiet --no-validation -c "pipeline=$pipeline" -o "$out/.cdk.out" >/dev/null 2>"$out/$name.log" \
    || { echo "synth failed: $pipeline (see $out/$name.log)" >&2; exit 1; }
  keep "pipeline-$name" "$out/.cdk.out"; rm -rf "$out/.cdk.out" "$out/$name.log"
done
for app in examples/*/app.py; do
  dir=$(dirname "$app"); name=$(basename "$dir")
  (cd "$dir" && npx cdk synth --quiet --no-validation -o "$out/.cdk.out" >/dev/null 2>"$out/$name.log") \
    || { echo "synth failed: $dir (see $out/$name.log)" >&2; exit 1; }
  keep "example-$name" "$out/.cdk.out"; rm -rf "$out/.cdk.out" "$out/$name.log"
done
echo "$(find "$out" -name '*.template.json' | wc -l) templates in $out"
