#define PT_NAME rt_hoist_bn
#define PT_B_K_MAJOR 0
#define PT_FUSION_KIND 4
#define PT_CT_ACT 0
#include "variant.cuh"
