#include "framework/core/status.h"

#include <gtest/gtest.h>

namespace stalelearn {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  STALELEARN_ASSIGN_OR_RETURN(int half, Half(x));
  STALELEARN_ASSIGN_OR_RETURN(int quarter, Half(half));
  *out = quarter;
  return Status::Ok();
}

TEST(StatusTest, PropagatesFirstError) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.WithContext("x").ToString(), "invalid argument: x: odd");
}

}  // namespace
}  // namespace stalelearn
