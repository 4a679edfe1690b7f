# cython: language_level=3, cdivision=True, infer_types=False
"""The simulation kernel, compiled (issue 39; docs/decisions.md, "A compiled core").

The same clock, heap and handler table as ``stratus.sim.kernel.PyKernel``, the reference,
with the heap a C array of typed records (time, kind, sequence, arguments) instead of a
list of tuples: an event's push and pop compare doubles and integers in C. The order is
the reference's total order -- time, then kind, then the order of scheduling -- so any
run takes its events in the same order under both (tests/core/test_kernel.py runs the
two side by side). ``stratus.sim.kernel`` selects this one unless STRATUS_PURE_PYTHON=1.
"""

from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc, realloc

from stratus.sim.events import add_handler


cdef struct Event:
    double t
    long kind
    long long seq
    PyObject* a  # owned references (taken at schedule, given back at pop or dealloc)
    PyObject* b


cdef inline bint _before(const Event* x, const Event* y) noexcept nogil:
    """Whether ``x`` comes before ``y``: by time, then kind, then scheduling order."""
    if x.t != y.t:
        return x.t < y.t
    if x.kind != y.kind:
        return x.kind < y.kind
    return x.seq < y.seq


cdef class Kernel:
    """Clock, event heap and handler table (``stratus.sim.kernel.PyKernel``'s contract)."""

    cdef public double now
    cdef Event* _heap
    cdef Py_ssize_t _n
    cdef Py_ssize_t _cap
    cdef long long _seq
    cdef list _handlers
    cdef bint _stopped

    def __cinit__(self, double start=0.0):
        self.now = start
        self._cap = 256
        self._heap = <Event*> malloc(self._cap * sizeof(Event))
        if self._heap == NULL:
            raise MemoryError()
        self._n = 0
        self._seq = 0
        self._handlers = []
        self._stopped = False

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self._heap != NULL:
            for i in range(self._n):
                Py_XDECREF(self._heap[i].a)
                Py_XDECREF(self._heap[i].b)
            free(self._heap)
            self._heap = NULL

    def on(self, kind, handler):
        """Register ``handler`` for events of ``kind`` (one handler per kind)."""
        add_handler(self._handlers, kind, handler)

    cpdef void schedule(self, double t, long kind, object a=None, object b=None) except *:
        """Add an event of ``kind`` at time ``t`` with the handler's arguments ``a``, ``b``."""
        cdef Event ev
        cdef Event* h
        cdef Py_ssize_t i, parent
        if self._n == self._cap:
            h = <Event*> realloc(self._heap, 2 * self._cap * sizeof(Event))
            if h == NULL:
                raise MemoryError()
            self._heap = h
            self._cap *= 2
        ev.t = t
        ev.kind = kind
        ev.seq = self._seq
        self._seq += 1
        Py_INCREF(a)
        Py_INCREF(b)
        ev.a = <PyObject*> a
        ev.b = <PyObject*> b
        h = self._heap
        i = self._n
        self._n += 1
        while i > 0:  # sift up
            parent = (i - 1) >> 1
            if _before(&ev, &h[parent]):
                h[i] = h[parent]
                i = parent
            else:
                break
        h[i] = ev

    cdef Event _pop(self) noexcept:
        """The first event, off the heap (the heap is not empty)."""
        cdef Event* h = self._heap
        cdef Event top = h[0]
        cdef Event last
        cdef Py_ssize_t i = 0, child, n
        self._n -= 1
        n = self._n
        if n > 0:
            last = h[n]
            while True:  # sift the last record down from the root
                child = 2 * i + 1
                if child >= n:
                    break
                if child + 1 < n and _before(&h[child + 1], &h[child]):
                    child += 1
                if _before(&h[child], &last):
                    h[i] = h[child]
                    i = child
                else:
                    break
            h[i] = last
        return top

    cpdef void stop(self):
        """End ``run`` after the handler that calls this returns."""
        self._stopped = True

    @property
    def stopped(self):
        return self._stopped

    def __len__(self):
        """Events waiting on the heap."""
        return self._n

    cpdef double peek(self):
        """Time of the next event (infinity when there is none)."""
        return self._heap[0].t if self._n else INFINITY

    cpdef double peek_except(self, long kind):
        """Time of the next event of another kind than ``kind`` (a scan of the heap)."""
        cdef double m = INFINITY
        cdef Py_ssize_t i
        for i in range(self._n):
            if self._heap[i].kind != kind and self._heap[i].t < m:
                m = self._heap[i].t
        return m

    cpdef bint run(self, double until=INFINITY) except? -1:
        """Handle events in order. Returns True when it stopped at ``until`` (the next
        event lies beyond it; the clock is then set to ``until``), False when the heap ran
        empty or a handler called ``stop()``."""
        cdef Event ev
        cdef list handlers = self._handlers
        cdef object a, b
        self._stopped = False
        while self._n:
            if self._heap[0].t > until:  # the next event stays queued
                self.now = until
                return True
            ev = self._pop()
            self.now = ev.t
            a = <object> ev.a  # a new reference each; the heap's are given back
            b = <object> ev.b
            Py_XDECREF(ev.a)
            Py_XDECREF(ev.b)
            handlers[ev.kind](a, b, ev.t)
            if self._stopped:
                return False
        return False
