// Options of the 'ucx' backend (backends/ucx/options.h).
#include <gtest/gtest.h>

#include "backends/ucx/options.h"

namespace stalelearn::backends::ucx {
namespace {

TEST(UcxOptions, MapToUcxConfigurationNames) {
  auto parsed = ParseUcxOptions({{"tls", "tcp"}, {"net_devices", "lo"}});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->ucx_settings, (std::map<std::string, std::string>{{"NET_DEVICES", "lo"}, {"TLS", "tcp"}}));
}

TEST(UcxOptions, NoneMeansUcxDefaults) {
  auto parsed = ParseUcxOptions({});
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->ucx_settings.empty());
}

TEST(UcxOptions, UnknownOptionListsTheKnownOnes) {
  auto parsed = ParseUcxOptions({{"tsl", "tcp"}});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("'tsl'"), std::string::npos) << parsed.status().message();
  EXPECT_NE(parsed.status().message().find("net_devices, progress_thread, tls"), std::string::npos) << parsed.status().message();
}

TEST(UcxOptions, EmptyValueIsRefused) {
  EXPECT_EQ(ParseUcxOptions({{"tls", ""}}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stalelearn::backends::ucx
