/* Run control shared by every kernel: Ctrl-C, a callback's request to stop,
 * and pyint's own LAPACK/BLAS error handler (xerbla).
 *
 * The drivers poll pyint_stop_status() once per step (fortran/core/control.f90)
 * and return the status it gives with the steps done so far, so a kernel
 * always returns normally and frees its workspace.
 *
 *  - Interrupt: pyint/_control.py replaces Python's SIGINT handler during a
 *    kernel call by one that only calls pyint_request_interrupt() (a
 *    KeyboardInterrupt raised inside a callback's Python code, at any bytecode,
 *    could not be caught reliably).  Other handlers stay: the thread that holds the GIL (the caller of the kernel; in the
 *    OpenMP batch, the team's master thread) runs Python's signal handlers with
 *    PyErr_CheckSignals(); when one raised (Ctrl-C: KeyboardInterrupt) the
 *    error is cleared, the interrupt flag set, and every thread sees the flag.
 *    Threads without the GIL only read the flags.
 *  - Abort: the Python side of a callback model (pyint.models.base) catches the
 *    exception of a model item, keeps it, fills the item with NaN and calls
 *    pyint_request_abort(): no exception ever unwinds through Fortran frames.
 *  - xerbla: LAPACK and BLAS call xerbla(name, argument) on an illegal argument;
 *    the reference one prints and STOPs the process (exit status 0).  This one,
 *    exported from the extension module, comes before liblapack.so/libblas.so in
 *    the extension's lookup scope (they are its dependencies), so it replaces
 *    theirs: it records the first routine name and argument number and returns;
 *    the routine returns info < 0 and the driver stops at its next poll.
 *
 *  - Progress: a poll passes the time the run has reached; the thread holding
 *    the GIL stores it (one store per step), and a progress line that Python
 *    draws from a SIGALRM handler (run by PyErr_CheckSignals at a poll:
 *    pyint/_progress.py) reads it with pyint_progress_time().
 *
 * Flags are reset by pyint_control_reset() before each kernel call.
 */
#include <Python.h>
#include <string.h>

#include "pyint_seam.h"   /* PYINT_STATUS_*: generated from seam/seam.toml (tools/gen_seam.py) */

#define PYINT_EXPORT __attribute__((visibility("default")))

static int interrupted;          /* atomic */
static int aborted;              /* atomic */
static int lapack_arg;           /* atomic; 0 = no LAPACK error recorded */
static char lapack_name[16];     /* written once, by the thread that set lapack_arg */
static double progress_t;        /* the time the run has reached (written by the GIL's thread) */

void pyint_control_reset(void)
{
    __atomic_store_n(&interrupted, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&aborted, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&lapack_arg, 0, __ATOMIC_SEQ_CST);
    memset(lapack_name, 0, sizeof lapack_name);
}

void pyint_request_abort(void)
{
    __atomic_store_n(&aborted, 1, __ATOMIC_SEQ_CST);
}

void pyint_request_interrupt(void)
{
    __atomic_store_n(&interrupted, 1, __ATOMIC_SEQ_CST);
}

/* 0 to go on, else the status the driver returns with; t: the time the run has reached. */
int pyint_stop_status(double t)
{
    if (__atomic_load_n(&lapack_arg, __ATOMIC_SEQ_CST) != 0) return PYINT_STATUS_LAPACK_ERROR;
    if (__atomic_load_n(&aborted, __ATOMIC_SEQ_CST)) return PYINT_STATUS_ABORTED;
    if (!__atomic_load_n(&interrupted, __ATOMIC_SEQ_CST) && PyGILState_Check()) {
        if (t == t) progress_t = t;   /* (NaN: no time) before the handlers run: the progress line reads it */
        /* only the thread holding the GIL may run the handlers (and only the
           main thread does: elsewhere PyErr_CheckSignals returns 0) */
        if (PyErr_CheckSignals() != 0) {
            PyErr_Clear();
            __atomic_store_n(&interrupted, 1, __ATOMIC_SEQ_CST);
        }
    }
    if (__atomic_load_n(&interrupted, __ATOMIC_SEQ_CST)) return PYINT_STATUS_INTERRUPTED;
    return 0;
}

/* The time the last poll of the GIL's thread reported (the progress line's). */
double pyint_progress_time(void)
{
    return progress_t;
}

/* [interrupted, aborted, LAPACK argument number] and the routine's name. */
void pyint_control_state(int *flags, char *name, int namelen)
{
    flags[0] = __atomic_load_n(&interrupted, __ATOMIC_SEQ_CST);
    flags[1] = __atomic_load_n(&aborted, __ATOMIC_SEQ_CST);
    flags[2] = __atomic_load_n(&lapack_arg, __ATOMIC_SEQ_CST);
    memset(name, ' ', (size_t)namelen);
    if (flags[2] != 0) {
        size_t k = strnlen(lapack_name, sizeof lapack_name);
        memcpy(name, lapack_name, k < (size_t)namelen ? k : (size_t)namelen);
    }
}

/* LAPACK/BLAS error handler: XERBLA(SRNAME, INFO) with gfortran's hidden length.
   The first error of a run is kept (a spin lock: OpenMP threads may race). */
PYINT_EXPORT void xerbla_(const char *srname, const int *info, size_t len)
{
    static int lock;
    size_t k = len < sizeof lapack_name - 1 ? len : sizeof lapack_name - 1;
    while (k > 0 && srname[k - 1] == ' ') k--;
    while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) { }
    if (__atomic_load_n(&lapack_arg, __ATOMIC_SEQ_CST) == 0) {
        memset(lapack_name, 0, sizeof lapack_name);
        memcpy(lapack_name, srname, k);
        __atomic_store_n(&lapack_arg, *info != 0 ? *info : -1, __ATOMIC_SEQ_CST);
    }
    __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}
