// The GPU-architecture rule of check_cuda_compatibility, as pure functions
// (no GPU needed): parsing cuda_archs metadata, which targets run on which
// compute capability, and the refusal message naming both sides.
#include <gtest/gtest.h>

#include "aoti/host_compatibility.h"

namespace kiln::aoti {
namespace {

MethodInfo with_metadata(std::map<std::string, std::string> metadata) {
  MethodInfo m;
  m.name = "forward";
  m.metadata = std::move(metadata);
  return m;
}

TEST(CudaArchParse, AcceptsTheSpellingsExportersWrite) {
  auto archs = parse_cuda_archs("90a+PTX, 8.0;sm_86 compute_75 100f SM_120");
  ASSERT_TRUE(archs.ok()) << last_error_message();
  ASSERT_EQ(archs->size(), 6u);
  EXPECT_EQ((*archs)[0].cc, 90);
  EXPECT_EQ((*archs)[0].variant, 'a');
  EXPECT_TRUE((*archs)[0].ptx);
  EXPECT_EQ((*archs)[1].cc, 80);
  EXPECT_FALSE((*archs)[1].ptx);
  EXPECT_EQ((*archs)[2].cc, 86);
  EXPECT_EQ((*archs)[3].cc, 75);
  EXPECT_TRUE((*archs)[3].ptx) << "compute_ means PTX";
  EXPECT_EQ((*archs)[4].cc, 100);
  EXPECT_EQ((*archs)[4].variant, 'f');
  EXPECT_EQ((*archs)[5].cc, 120);
  EXPECT_EQ(cuda_arch_name((*archs)[0]), "sm_90a+PTX");
  EXPECT_EQ(cuda_arch_name((*archs)[1]), "sm_80");
}

TEST(CudaArchParse, RefusesGarbageNamingTheEntry) {
  for (const char* bad : {"", " , ", "sm_", "9", "9.10", "ninety", "90b", "sm_9x"}) {
    auto archs = parse_cuda_archs(bad);
    EXPECT_FALSE(archs.ok()) << "'" << bad << "' was accepted";
    EXPECT_EQ(archs.error(), Error::InvalidProgram);
  }
  EXPECT_FALSE(parse_cuda_archs("80,bogus").ok());
  EXPECT_NE(last_error_message().find("'bogus'"), std::string::npos) << last_error_message();
}

TEST(CudaArchRule, MachineCodeRunsOnlyOnItsOwnCapability) {
  const CudaArch sm80{80, 0, false};
  EXPECT_TRUE(cuda_arch_runs_on(sm80, 80));
  EXPECT_FALSE(cuda_arch_runs_on(sm80, 86)) << "conservative: no minor-version forward compatibility for SASS";
  EXPECT_FALSE(cuda_arch_runs_on(sm80, 90));
  EXPECT_FALSE(cuda_arch_runs_on(sm80, 75));
}

TEST(CudaArchRule, PlainPtxRunsOnNewerGpus) {
  const CudaArch ptx80{80, 0, true};
  EXPECT_TRUE(cuda_arch_runs_on(ptx80, 80));
  EXPECT_TRUE(cuda_arch_runs_on(ptx80, 86));
  EXPECT_TRUE(cuda_arch_runs_on(ptx80, 90));
  EXPECT_TRUE(cuda_arch_runs_on(ptx80, 120));
  EXPECT_FALSE(cuda_arch_runs_on(ptx80, 75));
}

TEST(CudaArchRule, ArchSpecificCodeRunsOnlyThereEvenWithPtx) {
  const CudaArch sm90a{90, 'a', true};
  EXPECT_TRUE(cuda_arch_runs_on(sm90a, 90));
  EXPECT_FALSE(cuda_arch_runs_on(sm90a, 100));
  EXPECT_FALSE(cuda_arch_runs_on(sm90a, 89));
}

TEST(CudaArchRule, FamilyCodeRunsWithinItsMajorVersion) {
  const CudaArch sm100f{100, 'f', false};
  EXPECT_TRUE(cuda_arch_runs_on(sm100f, 100));
  EXPECT_TRUE(cuda_arch_runs_on(sm100f, 103));
  EXPECT_FALSE(cuda_arch_runs_on(sm100f, 120));
  EXPECT_FALSE(cuda_arch_runs_on(sm100f, 90));
}

TEST(CudaCompatibility, RefusalNamesBothArchitectures) {
  EXPECT_EQ(check_cuda_compatibility(with_metadata({{"cuda_archs", "90a+PTX"}}), 80, "cuda:0"), Error::NotSupported);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("built for sm_90a+PTX, this GPU (cuda:0) is sm_80"), std::string::npos) << message;
  EXPECT_NE(message.find("method 'forward'"), std::string::npos) << message;
}

TEST(CudaCompatibility, AnyRunnableEntryIsEnough) {
  EXPECT_EQ(check_cuda_compatibility(with_metadata({{"cuda_archs", "80,90a"}}), 90, "cuda:0"), Error::Ok);
  EXPECT_EQ(check_cuda_compatibility(with_metadata({{"cuda_archs", "75+PTX"}}), 90, "cuda:1"), Error::Ok);
  EXPECT_EQ(check_cuda_compatibility(with_metadata({{"cuda_archs", "80,86"}}), 89, "cuda:1"), Error::NotSupported);
}

TEST(CudaCompatibility, FallsBackToAotInductorsCapabilityAsExactMachineCode) {
  EXPECT_EQ(check_cuda_compatibility(with_metadata({{"AOTI_COMPUTE_CAPABILITY", "90"}}), 90, "cuda:0"), Error::Ok);
  EXPECT_EQ(check_cuda_compatibility(with_metadata({{"AOTI_COMPUTE_CAPABILITY", "80"}}), 90, "cuda:0"),
            Error::NotSupported);
  EXPECT_NE(last_error_message().find("built for sm_80, this GPU (cuda:0) is sm_90"), std::string::npos)
      << last_error_message();
  // cuda_archs wins over AOTInductor's single number.
  EXPECT_EQ(check_cuda_compatibility(with_metadata({{"cuda_archs", "80+PTX"}, {"AOTI_COMPUTE_CAPABILITY", "80"}}), 90,
                                     "cuda:0"),
            Error::Ok);
}

TEST(CudaCompatibility, MethodsWithoutArchMetadataPass) {
  EXPECT_EQ(check_cuda_compatibility(with_metadata({}), 90, "cuda:0"), Error::Ok);
  EXPECT_EQ(check_cuda_compatibility(with_metadata({{"AOTI_COMPUTE_CAPABILITY", "None"}}), 90, "cuda:0"), Error::Ok);
}

TEST(CudaCompatibility, MalformedMetadataIsAnInvalidProgram) {
  EXPECT_EQ(check_cuda_compatibility(with_metadata({{"cuda_archs", "sm_nine"}}), 90, "cuda:0"), Error::InvalidProgram);
  EXPECT_NE(last_error_message().find("cuda_archs"), std::string::npos) << last_error_message();
}

}  // namespace
}  // namespace kiln::aoti
