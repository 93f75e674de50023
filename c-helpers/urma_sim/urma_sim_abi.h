/*
 * urma_sim_abi.h — part of urma_sim.h: which named UMDK ABI a simulator build reproduces.
 *
 * One header, one named ABI per build (the Makefile passes -DURMA_SIM_ABI=<n>; checked against
 * the real headers of openeuler-mirror/umdk, see ffi/layouts/urma_abi.ts for the commits):
 *   URMA_SIM_ABI_2512 (default) "25.12":      urma_rjetty_t 48, urma_seg_t 48, urma_target_seg_t 88
 *   URMA_SIM_ABI_B081           "25.12-B081": urma_rjetty_t 72 (flag@40 is a 24-byte union with
 *                                             user_tag, tp_type@64); segments as 25.12
 *   URMA_SIM_ABI_EXT            "26.06-ext":  B081's urma_rjetty_t + urma_ext_t (80), urma_seg_t
 *                                             56 (+ urma_ext_t), urma_target_seg_t 96
 *   URMA_SIM_ABI_EXT56          "26.06-ext56": urma_rjetty_t 56 (4-byte flag, + urma_ext_t),
 *                                             segments as 26.06-ext
 */
#ifndef VERBUS_URMA_SIM_ABI_H
#define VERBUS_URMA_SIM_ABI_H

#define URMA_SIM_ABI_2512 0
#define URMA_SIM_ABI_B081 1
#define URMA_SIM_ABI_EXT 2
#define URMA_SIM_ABI_EXT56 3
#ifndef URMA_SIM_ABI
#define URMA_SIM_ABI URMA_SIM_ABI_2512
#endif
#if URMA_SIM_ABI == URMA_SIM_ABI_2512
#define URMA_SIM_ABI_NAME "25.12"
#elif URMA_SIM_ABI == URMA_SIM_ABI_B081
#define URMA_SIM_ABI_NAME "25.12-B081"
#elif URMA_SIM_ABI == URMA_SIM_ABI_EXT
#define URMA_SIM_ABI_NAME "26.06-ext"
#elif URMA_SIM_ABI == URMA_SIM_ABI_EXT56
#define URMA_SIM_ABI_NAME "26.06-ext56"
#else
#error "unknown URMA_SIM_ABI"
#endif
/* The import-jetty flag is a 24-byte union with user_tag (B081, 26.06-ext). */
#define URMA_SIM_USER_TAG (URMA_SIM_ABI == URMA_SIM_ABI_B081 || URMA_SIM_ABI == URMA_SIM_ABI_EXT)
/* urma_seg_t and urma_rjetty_t end in an urma_ext_t (26.06-ext, 26.06-ext56). */
#define URMA_SIM_EXT (URMA_SIM_ABI == URMA_SIM_ABI_EXT || URMA_SIM_ABI == URMA_SIM_ABI_EXT56)

/* The fields only some ABIs have (expanded inside urma_sim.h's structs). */
#if URMA_SIM_USER_TAG
#define URMA_SIM_USER_TAG_FIELD struct { uint64_t reserved; uint64_t stag; uint64_t dtag; } user_tag;
#else
#define URMA_SIM_USER_TAG_FIELD
#endif
#if URMA_SIM_EXT
#define URMA_SIM_EXT_FIELD urma_ext_t ext;
#else
#define URMA_SIM_EXT_FIELD
#endif

#endif
