// The simulated NPU's per-op argument conversion in C++ (the generic kernel's hot path).
//
// An npu tensor of the simulator is host memory imported through DLPack with its device field
// set to (kDLExtDev, index); a CPU alias is the same memory re-imported with (kDLCPU, 0). The
// Python side (_memory._retag, _dispatch._host_arg) does exactly this; the functions here are
// the same steps without the Python bytecode in between, and give up (return None) on any case
// the Python code handles specially, so it stays the one place those rules live.
//
// Kept in its own file because it needs ATen's and torch's Python headers, which the guard
// (sim_guard.cpp) does not: ninja compiles the two in parallel.

#include <ATen/DLConvertor.h>
#include <torch/csrc/autograd/python_variable.h>
#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace {

constexpr int kHostDevice = 1;  // kDLCPU

// A new reference to a tensor sharing `obj`'s memory, imported as device (device_type, index).
PyObject* retag(PyObject* obj, int device_type, int index) {
  DLManagedTensor* m = at::toDLPack(THPVariable_Unpack(obj));
  m->dl_tensor.device.device_type = static_cast<DLDeviceType>(device_type);
  m->dl_tensor.device.device_id = index;
  return THPVariable_Wrap(at::fromDLPack(m));
}

// `hosts` maps data_ptr -> weakref to the host tensor of that allocation (_memory._hosts).
// New reference to that host tensor when it covers exactly `t`, else to a fresh CPU retag.
PyObject* host_for_read(const at::Tensor& t, PyObject* obj, PyObject* hosts) {
  PyObject* key = PyLong_FromVoidPtr(t.data_ptr());
  if (key == nullptr) return nullptr;
  PyObject* ref = PyDict_GetItemWithError(hosts, key);  // borrowed
  Py_DECREF(key);
  if (ref != nullptr) {
    PyObject* h = PyWeakref_GetObject(ref);  // borrowed; Py_None once dead
    if (h != nullptr && THPVariable_Check(h)) {
      const at::Tensor& ht = THPVariable_Unpack(h);
      if (ht.dtype() == t.dtype() && ht.sizes().equals(t.sizes()) && ht.strides().equals(t.strides())) {
        Py_INCREF(h);
        return h;
      }
    }
  } else if (PyErr_Occurred()) {
    return nullptr;
  }
  return retag(obj, kHostDevice, 0);
}

bool is_number(PyObject* a) {
  return PyLong_Check(a) || PyFloat_Check(a) || PyComplex_Check(a);
}

// The host form of a sequence of kernel arguments: ``(list, index)`` or None (see host_args).
py::object host_args(py::handle seq, py::handle tensor_pos, py::handle written, py::handle hosts) {
  PyObject* fast = PySequence_Fast(seq.ptr(), "host_args expects a sequence");
  if (fast == nullptr) throw py::error_already_set();
  py::object keep = py::reinterpret_steal<py::object>(fast);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject** items = PySequence_Fast_ITEMS(fast);
  py::list out(n);
  int index = -1;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* a = items[i];
    PyObject* converted = a;
    if (THPVariable_Check(a)) {
      const at::Tensor& t = THPVariable_Unpack(a);
      const c10::Device device = t.device();
      if (device.type() == c10::DeviceType::CPU) {
        if (t.dim() != 0) return py::none();  // the Python path raises the mixed-device error
        Py_INCREF(a);
      } else {
        if (device.type() != c10::DeviceType::PrivateUse1 || t.is_conj() || t.is_neg()) return py::none();
        const int idx = device.index();
        if (index < 0) {
          index = idx;
        } else if (idx != index) {
          return py::none();
        }
        const bool write = PySequence_Contains(written.ptr(), py::int_(i).ptr()) == 1;
        converted = write ? retag(a, kHostDevice, 0) : host_for_read(t, a, hosts.ptr());
        if (converted == nullptr) throw py::error_already_set();
      }
    } else {
      if (is_number(a) && PySequence_Contains(tensor_pos.ptr(), py::int_(i).ptr()) == 1) return py::none();
      Py_INCREF(a);
    }
    PyList_SET_ITEM(out.ptr(), i, converted);
  }
  return py::make_tuple(out, index < 0 ? py::object(py::none()) : py::object(py::int_(index)));
}

}  // namespace

void register_fast(py::module_& m) {
  m.def("host_args", &host_args, py::arg("args"), py::arg("tensor_pos"), py::arg("written"), py::arg("hosts"),
        "Host forms of kernel arguments ``args`` (a sequence): npu tensors, all on one device, become CPU "
        "aliases (the allocation's own host tensor from ``hosts`` when it covers exactly the tensor, a fresh "
        "retag at ``written`` positions), 0-dim CPU tensors and non-tensors stay. Returns ``(list, index)`` "
        "(index None without npu tensors), or None when an argument needs the Python path: a CPU tensor "
        "with dimensions, a second device index, a conjugate or negative bit, a Python number at a "
        "``tensor_pos`` position.");
  m.def("retag", [](py::handle t, int device_type, int index) {
          PyObject* r = retag(t.ptr(), device_type, index);
          if (r == nullptr) throw py::error_already_set();
          return py::reinterpret_steal<py::object>(r);
        }, py::arg("tensor"), py::arg("device_type"), py::arg("index"),
        "The tensor sharing ``tensor``'s memory, imported through DLPack as (device_type, index).");
}
