#define PT_NAME ct_gelu_bn
#define PT_B_K_MAJOR 0
#define PT_FUSION_KIND 1
#define PT_CT_ACT 2
#include "variant.cuh"
