#include <gtest/gtest.h>
TEST(GpuPlaceholder, Builds) { GTEST_SKIP() << "placeholder"; }
