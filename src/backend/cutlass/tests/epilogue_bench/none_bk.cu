#define PT_NAME none_bk
#define PT_B_K_MAJOR 1
#define PT_FUSION_KIND 3
#define PT_CT_ACT 0
#include "variant.cuh"
