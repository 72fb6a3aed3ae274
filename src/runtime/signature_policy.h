// The signature policy a Module enforces at load(): whether the program must
// be signed by a trusted key, and which keys are trusted. It comes from the
// "program" load options (kiln/module.h) and from the runtime's settings
// (docs/settings.md; the environment fixes them when it sets them):
//   require_signature   require a trusted signature for every program
//   trusted_keys        trusted-keys files (':'-separated)
// The settings can only tighten a policy: options cannot switch off a
// requirement they set, and their keys are added to those given as options.
// Neither can a later load() on the same Module: a signature asked for once
// stays required (Module passes `already_required`).
#pragma once

#include <vector>

#include "core/settings.h"
#include "kiln/backend_options.h"
#include "kiln/error.h"
#include "kiln/program_file.h"
#include "kiln/signing.h"

namespace kiln {

struct SignaturePolicy {
  bool required = false;
  std::vector<PublicKey> trusted;

  /// The policy from the "program" options (may be nullptr) and `settings`.
  /// Trusted keys are read only when a signature is required.
  /// InvalidArgument for an unknown option, a value of the wrong type, a
  /// malformed key, or a required signature with no trusted key at all;
  /// NotFound / IoError for an unreadable key file.
  /// InvalidArgument too for require_signature=false when `already_required`.
  static Result<SignaturePolicy> from(const Settings& settings, const BackendOptions* program_options,
                                      bool already_required = false);

  /// Whether these options or the settings ask for a signature. Reads no
  /// key, so it cannot fail on one: Module records the request before anything
  /// else about the load can go wrong.
  static bool asked_for(const Settings& settings, const BackendOptions* program_options) noexcept;

  /// Ok when nothing is required; otherwise verify_signed_program (signature,
  /// signer, and every named data digest, so nothing unsigned is ever loaded),
  /// handing back the verified private copies through `verified`.
  Error enforce(const ProgramFile& program, std::vector<NamedBytes>* verified = nullptr) const;
};

}  // namespace kiln
