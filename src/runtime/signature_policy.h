// The signature policy a Module enforces at load(): whether the program must
// be signed by a trusted key, and which keys are trusted. It comes from the
// "program" load options (kiln/module.h) and from the environment:
//   KILN_REQUIRE_SIGNATURE=1        require a trusted signature for every program
//                                   (any value but "" or "0" requires: fail closed)
//   KILN_TRUSTED_KEYS=a.pub:b.pub   trusted-keys files (':'-separated)
// The environment can only tighten a policy: options cannot switch off a
// requirement it sets, and its keys are added to those given as options.
// Neither can a later load() on the same Module: a signature asked for once
// stays required (Module passes `already_required`).
#pragma once

#include <vector>

#include "kiln/backend_options.h"
#include "kiln/error.h"
#include "kiln/program_file.h"
#include "kiln/signing.h"

namespace kiln {

struct SignaturePolicy {
  bool required = false;
  std::vector<PublicKey> trusted;

  /// The policy from the "program" options (may be nullptr) and the
  /// environment. Trusted keys are read only when a signature is required.
  /// InvalidArgument for an unknown option, a value of the wrong type, a
  /// malformed key, or a required signature with no trusted key at all;
  /// NotFound / IoError for an unreadable key file.
  /// InvalidArgument too for require_signature=false when `already_required`.
  static Result<SignaturePolicy> from(const BackendOptions* program_options, bool already_required = false);

  /// Whether these options or the environment ask for a signature. Reads no
  /// key, so it cannot fail on one: Module records the request before anything
  /// else about the load can go wrong.
  static bool asked_for(const BackendOptions* program_options) noexcept;

  /// Ok when nothing is required; otherwise verify_signed_program (signature,
  /// signer, and every named data digest, so nothing unsigned is ever loaded),
  /// handing back the verified private copies through `verified`.
  Error enforce(const ProgramFile& program, std::vector<NamedBytes>* verified = nullptr) const;
};

}  // namespace kiln
