/*===- collective_plugin.h - the ABI of a collective plugin -------*- C -*-===*
 *
 * A sharded model's ranks exchange data through a plugin the runtime opens
 * at run time (dlopen), so that the runtime itself links no MPI or NCCL:
 * libllmc_mpi.so (OpenMPI, launched by mpirun) implements this table, and a
 * NCCL plugin will too. Every call returns 0 on success; on failure it
 * returns non-zero and writes a complete message into `err` (of `errlen`
 * bytes, always NUL-terminated).
 *
 *===----------------------------------------------------------------------===*/
#ifndef LLMC_COLLECTIVE_PLUGIN_H
#define LLMC_COLLECTIVE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLMC_COLLECTIVE_ABI_VERSION 1

typedef struct llmc_collective llmc_collective;

enum llmc_reduction {
  LLMC_REDUCE_SUM = 0,
  LLMC_REDUCE_MAX = 1,
  LLMC_REDUCE_MIN = 2
};

typedef struct llmc_collective_api {
  int abi_version; /* LLMC_COLLECTIVE_ABI_VERSION */
  /* Joins the job's ranks; fails (no hang) where they do not all arrive
   * within `setup_timeout_s` seconds. */
  int (*open)(double setup_timeout_s, llmc_collective **out, char *err,
              size_t errlen);
  /* Ends this rank's part (after every rank's last collective). */
  void (*close)(llmc_collective *c);
  /* Ends the whole job at once (every rank), after an error on this one. */
  void (*abort_job)(llmc_collective *c, int code);
  int (*rank)(llmc_collective *c);
  int (*size)(llmc_collective *c);
  /* The group of the ranks that differ from this one only along `axes` of
   * a mesh of `shape` (ranks numbered row-major; the job must have them
   * all): its handle in *group. A member's index in the group is its
   * position along `axes`, row-major in their order. Every rank must
   * call it alike. */
  int (*group)(llmc_collective *c, const int64_t *shape, int rank_dims,
               const int *axes, int naxes, int *group, char *err,
               size_t errlen);
  int (*group_size)(llmc_collective *c, int group);
  int (*group_rank)(llmc_collective *c, int group);
  /* `count` floats combined elementwise over the group, in place. */
  int (*all_reduce_f32)(llmc_collective *c, int group, float *data,
                        int64_t count, int reduction, char *err, size_t errlen);
  /* Each member's `bytes` of `in`, concatenated in member order into `out`
   * (group size times `bytes`). */
  int (*all_gather)(llmc_collective *c, int group, const void *in, void *out,
                    int64_t bytes, char *err, size_t errlen);
  int (*send)(llmc_collective *c, int group, int peer, const void *data,
              int64_t bytes, char *err, size_t errlen);
  int (*recv)(llmc_collective *c, int group, int peer, void *data,
              int64_t bytes, char *err, size_t errlen);
  /* Fails on every rank unless every rank passed the same `value` (an
   * artifact's fingerprint); the message names what differs. */
  int (*agree)(llmc_collective *c, const char *what, uint64_t value, char *err,
               size_t errlen);
} llmc_collective_api;

/* The plugin's one exported symbol. */
const llmc_collective_api *llmc_collective_plugin(void);

#ifdef __cplusplus
}
#endif

#endif /* LLMC_COLLECTIVE_PLUGIN_H */
