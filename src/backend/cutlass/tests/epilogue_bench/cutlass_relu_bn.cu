#define PT_NAME cutlass_relu_bn
#define PT_B_K_MAJOR 0
#define PT_FUSION_KIND 2
#define PT_CT_ACT 0
#include "variant.cuh"
