// Multi-device PrivateUse1 device guard and backend hooks (pinned host memory)
// for ascend-compat's simulated NPU.
//
// PyTorch's Python device guard (torch._C._acc.DeviceGuard) reports exactly one
// device, and the autograd engine sizes its per-device ready queues from the
// registered guards' deviceCount() the first time backward() touches a device
// tensor. backward() through tensors on npu:1 therefore needs a guard that reports
// N devices. This file is that guard (plus the hooks and the zero-byte allocator below):
// allocation, kernels and memory stay in the simulator's Python code.
//
// What it tracks, per thread as on real accelerators: the current device index and
// the current stream of each device. Streams are ids only (execution is
// synchronous); events carry a host timestamp so elapsed_time works.
//
// Registration is explicit (register_guard), never a static C10_REGISTER_GUARD_IMPL:
// a static registrar would overwrite whatever guard is registered when the library
// happens to be loaded, and the device count must be known before registering.
//
// The backend hooks (register_hooks) exist for pinned host memory: torch asks the
// PrivateUse1 hooks for getPinnedMemoryAllocator() on every pin_memory=True factory,
// Tensor.pin_memory() and non-blocking npu->cpu copy, and for isPinnedPtr() on
// Tensor.is_pinned(); torch's Python hooks (torch._C._acc.PrivateUse1Hooks) cannot
// provide either. torch_npu answers both from its CachingHostAllocator; here pinned
// blocks are ordinary host memory whose ranges are recorded.
//
// The device allocator (registered with the hooks) serves zero-byte requests only: torch's
// quantized factories (at::new_qtensor) ask c10::GetAllocator(PrivateUse1) for the storage
// of every quantized npu tensor, and the simulator's Python side creates such a tensor with
// zero bytes, then points it at device memory it allocated and accounted itself. Any other
// request is refused with a clear error (device memory is allocated in Python).
//
// resizePrivateUse1Bytes (UntypedStorage.resize_ on an npu storage: FSDP2 frees and regrows
// parameter memory this way) asks a Python callback (set_resize_callback) for a new npu byte
// tensor of the new size, allocated and accounted like any other, copies the common prefix and
// points the storage at it; the old memory is released with the storage's old data pointer.

#include <pybind11/pybind11.h>
#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#else
#include <torch/version.h>
#endif

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/Tensor.h>
#include <c10/core/Storage.h>
#include <torch/csrc/autograd/python_variable.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

using c10::Device;
using c10::DeviceIndex;
using c10::DeviceType;
using c10::Stream;
using c10::StreamId;

constexpr int kMaxDevices = 64;

std::atomic<DeviceIndex> g_device_count{0};
std::atomic<StreamId> g_next_stream_id{1};

thread_local DeviceIndex t_current_device = 0;
thread_local std::array<StreamId, kMaxDevices> t_current_stream{};  // 0 = default

struct SimEvent {
  std::chrono::steady_clock::time_point when;
};

void check_index(DeviceIndex index) {
  const DeviceIndex count = g_device_count.load();
  TORCH_CHECK(
      index >= 0 && index < count,
      "Invalid device ordinal npu:", static_cast<int>(index),
      ": the simulated NPU has ", static_cast<int>(count),
      " device(s). Ask for more with ascend_compat.simulator.install(devices=N) "
      "or ASCEND_COMPAT_SIM_DEVICES=N.");
}

DeviceIndex resolve(Device d) {
  return d.has_index() ? d.index() : t_current_device;
}

struct SimNpuGuard final : public c10::impl::DeviceGuardImplInterface {
  DeviceType type() const override {
    return DeviceType::PrivateUse1;
  }

  Device exchangeDevice(Device d) const override {
    const Device old = getDevice();
    if (d.index() != t_current_device) {
      setDevice(d);
    }
    return old;
  }

  Device getDevice() const override {
    return Device(DeviceType::PrivateUse1, t_current_device);
  }

  void setDevice(Device d) const override {
    TORCH_CHECK(d.is_privateuseone(), "expected an npu device, got ", d);
    const DeviceIndex index = resolve(d);
    check_index(index);
    t_current_device = index;
  }

  void uncheckedSetDevice(Device d) const noexcept override {
    const DeviceIndex index = resolve(d);
    if (index >= 0 && index < g_device_count.load()) {
      t_current_device = index;
    }
  }

  Stream getStream(Device d) const override {
    const DeviceIndex index = resolve(d);
    const StreamId id =
        (index >= 0 && index < kMaxDevices) ? t_current_stream[index] : 0;
    return Stream(Stream::UNSAFE, Device(DeviceType::PrivateUse1, index), id);
  }

  Stream getDefaultStream(Device d) const override {
    return Stream(Stream::DEFAULT, Device(DeviceType::PrivateUse1, resolve(d)));
  }

  Stream getStreamFromGlobalPool(Device d, bool /*isHighPriority*/ = false)
      const override {
    return getNewStream(d, 0);
  }

  Stream getNewStream(Device d, int /*priority*/ = 0) const override {
    const DeviceIndex index = resolve(d);
    check_index(index);
    return Stream(
        Stream::UNSAFE, Device(DeviceType::PrivateUse1, index),
        g_next_stream_id.fetch_add(1));
  }

  Stream exchangeStream(Stream s) const noexcept override {
    const DeviceIndex index = s.device_index();
    if (index < 0 || index >= kMaxDevices) {
      return s;
    }
    const Stream old(
        Stream::UNSAFE, Device(DeviceType::PrivateUse1, index),
        t_current_stream[index]);
    t_current_stream[index] = s.id();
    return old;
  }

  DeviceIndex deviceCount() const noexcept override {
    return g_device_count.load();
  }

  void record(
      void** event,
      const Stream& /*stream*/,
      const DeviceIndex /*device_index*/,
      const c10::EventFlag /*flag*/) const override {
    if (*event == nullptr) {
      *event = new SimEvent();
    }
    static_cast<SimEvent*>(*event)->when = std::chrono::steady_clock::now();
  }

  void block(void* /*event*/, const Stream& /*stream*/) const override {}

  bool queryEvent(void* /*event*/) const override {
    return true;
  }

  void destroyEvent(void* event, const DeviceIndex /*device_index*/)
      const noexcept override {
    delete static_cast<SimEvent*>(event);
  }

  void synchronizeEvent(void* /*event*/) const override {}

  double elapsedTime(void* start, void* end, const DeviceIndex /*device_index*/)
      const override {
    TORCH_CHECK(
        start != nullptr && end != nullptr,
        "Both events must be recorded before calculating elapsed time.");
    const auto a = static_cast<SimEvent*>(start)->when;
    const auto b = static_cast<SimEvent*>(end)->when;
    return std::chrono::duration<double, std::milli>(b - a).count();
  }

  bool queryStream(const Stream& /*stream*/) const override {
    return true;
  }

  void synchronizeStream(const Stream& /*stream*/) const override {}

  void synchronizeDevice(const DeviceIndex /*device_index*/) const override {}
};

// Leaked on purpose: the registry must stay valid until process exit.
SimNpuGuard* the_guard() {
  static SimNpuGuard* guard = new SimNpuGuard();
  return guard;
}

std::mutex g_register_mutex;

const c10::impl::DeviceGuardImplInterface* registered() {
  return c10::impl::device_guard_impl_registry[static_cast<size_t>(
                                                   DeviceType::PrivateUse1)]
      .load();
}

// Returns true once this guard is the PrivateUse1 guard with `count` devices.
// Raises if another guard is already registered (it cannot be replaced safely:
// the autograd engine may already have sized its queues from it) or if a
// different count was registered before.
bool register_guard(int64_t count) {
  std::lock_guard<std::mutex> lock(g_register_mutex);
  TORCH_CHECK(
      count >= 1 && count <= kMaxDevices,
      "the simulated NPU supports 1 to ", kMaxDevices, " devices, not ", count);
  const auto* current = registered();
  if (current == the_guard()) {
    TORCH_CHECK(
        g_device_count.load() == count,
        "the simulated NPU guard is already registered with ",
        static_cast<int>(g_device_count.load()), " devices; cannot change it to ",
        count, " in the same process");
    return true;
  }
  TORCH_CHECK(
      current == nullptr,
      "another device guard is already registered for PrivateUse1; the "
      "multi-device guard must be registered before the backend is set up");
  g_device_count.store(static_cast<DeviceIndex>(count));
  c10::impl::registerDeviceGuard(DeviceType::PrivateUse1, the_guard());
  return true;
}

bool is_active() {
  return registered() == the_guard();
}

void set_device(int64_t index) {
  check_index(static_cast<DeviceIndex>(index));
  t_current_device = static_cast<DeviceIndex>(index);
}

// --- pinned host memory and the backend hooks -----------------------------------

std::mutex g_pinned_mutex;
std::map<std::uintptr_t, std::size_t> g_pinned;  // block start -> size (>= 1)
std::atomic<int64_t> g_pinned_blocks{0};

void pinned_free(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    g_pinned.erase(reinterpret_cast<std::uintptr_t>(ptr));
  }
  g_pinned_blocks.fetch_sub(1);
  c10::free_cpu(ptr);
}

struct SimPinnedAllocator final : public c10::Allocator {
  c10::DataPtr allocate(std::size_t n) override {
    // a zero-byte request still gets a block, so every pinned storage has an address
    void* ptr = c10::alloc_cpu(n == 0 ? 1 : n);
    {
      std::lock_guard<std::mutex> lock(g_pinned_mutex);
      g_pinned[reinterpret_cast<std::uintptr_t>(ptr)] = n == 0 ? 1 : n;
    }
    g_pinned_blocks.fetch_add(1);
    return {ptr, ptr, &pinned_free, c10::Device(DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &pinned_free;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

bool is_pinned_ptr(const void* data) {
  const auto p = reinterpret_cast<std::uintptr_t>(data);
  std::lock_guard<std::mutex> lock(g_pinned_mutex);
  auto it = g_pinned.upper_bound(p);
  if (it == g_pinned.begin()) {
    return false;
  }
  --it;
  return p < it->first + it->second;
}

// The Python callable (nbytes, device_index) -> npu uint8 tensor; a strong reference kept for the
// process's lifetime (never released: c10 may resize during interpreter shutdown).
PyObject* g_resize_callback = nullptr;

void delete_kept_storage(void* ctx) {
  delete static_cast<c10::Storage*>(ctx);
}

void resize_npu_storage(const c10::Storage& storage, size_t newsize) {
  TORCH_CHECK(g_resize_callback != nullptr,
              "resizing an npu storage needs the simulator's resize callback (simulator not installed?)");
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  const size_t old = impl->nbytes();
  at::Tensor fresh;
  {
    pybind11::gil_scoped_acquire gil;
    pybind11::object made = pybind11::reinterpret_borrow<pybind11::object>(g_resize_callback)(
        static_cast<int64_t>(newsize), static_cast<int>(storage.device().index()));
    TORCH_CHECK(THPVariable_Check(made.ptr()), "the simulator's resize callback returned no tensor");
    fresh = THPVariable_Unpack(made.ptr());
  }
  void* dst = newsize > 0 ? fresh.data_ptr() : nullptr;
  if (dst != nullptr && old > 0 && impl->data() != nullptr) {
    std::memcpy(dst, impl->data(), std::min(old, newsize));
  }
  // the fresh tensor's storage owns the memory (and its accounting); the DataPtr keeps it alive
  auto* keep = new c10::Storage(fresh.storage());
  impl->set_data_ptr_noswap(c10::DataPtr(dst, keep, &delete_kept_storage, storage.device()));
  impl->set_nbytes(newsize);
}

SimPinnedAllocator* the_pinned_allocator() {
  static SimPinnedAllocator* allocator = new SimPinnedAllocator();
  return allocator;
}

struct SimNpuHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }
  bool isAvailable() const override {
    return true;
  }
  bool hasPrimaryContext(DeviceIndex /*device_index*/) const override {
    return true;
  }
  bool isPinnedPtr(const void* data) const override {
    return is_pinned_ptr(data);
  }
  c10::Allocator* getPinnedMemoryAllocator() const override {
    return the_pinned_allocator();
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    resize_npu_storage(storage, newsize);
  }
};

SimNpuHooks* g_hooks = nullptr;

void no_delete(void* /*ptr*/) {}

struct SimDeviceAllocator final : public c10::Allocator {
  c10::DataPtr allocate(std::size_t n) override {
    TORCH_CHECK(n == 0, "the simulated NPU allocates device memory in Python; this C++ allocation of ", n,
                " bytes on the npu device is not simulated");
    const Device current = c10::impl::getDeviceGuardImpl(DeviceType::PrivateUse1)->getDevice();
    return {nullptr, nullptr, &no_delete, current};
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &no_delete;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

SimDeviceAllocator* g_device_allocator = nullptr;

// Registers the hooks once; returns false when other PrivateUse1 hooks are already
// registered (torch accepts one registration per process).
bool register_hooks() {
  std::lock_guard<std::mutex> lock(g_register_mutex);
  if (g_hooks != nullptr) {
    return true;
  }
  if (at::isPrivateUse1HooksRegistered()) {
    return false;
  }
  g_hooks = new SimNpuHooks();  // leaked on purpose: torch keeps the pointer
  at::RegisterPrivateUse1HooksInterface(g_hooks);
  if (c10::GetAllocator(DeviceType::PrivateUse1) == nullptr) {
    g_device_allocator = new SimDeviceAllocator();  // leaked on purpose: c10 keeps the pointer
    c10::SetAllocator(DeviceType::PrivateUse1, g_device_allocator);
  }
  return true;
}

// HF32 rounding of n float32 values (raw IEEE bits) from src to dst in one pass: a 10-bit
// mantissa, to nearest even; Inf and NaN copied unchanged. The Python caller owns both buffers.
void hf32_round_into(uintptr_t src, uintptr_t dst, int64_t n) {
  const uint32_t* in = reinterpret_cast<const uint32_t*>(src);
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t b = in[i];
    out[i] = (b & 0x7F800000u) == 0x7F800000u ? b : (b + 0xFFFu + ((b >> 13) & 1u)) & ~0x1FFFu;
  }
}

}  // namespace

namespace py = pybind11;

void register_fast(py::module_& m);  // sim_fast.cpp: the generic kernel's argument conversion

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "ascend-compat simulated NPU: multi-device PrivateUse1 device guard, backend hooks, HF32 rounding, "
            "argument conversion";
  register_fast(m);
  m.def("register_guard", &register_guard, py::arg("count"));
  m.def("is_active", &is_active);
  m.def("device_count", []() { return static_cast<int>(g_device_count.load()); });
  m.def("current_device", []() { return static_cast<int>(t_current_device); });
  m.def("set_device", &set_device, py::arg("index"));
  m.def("register_hooks", &register_hooks);
  m.def("hooks_active", []() { return g_hooks != nullptr; });
  m.def("set_resize_callback", [](py::object callback) {
    PyObject* old = g_resize_callback;
    g_resize_callback = callback.release().ptr();  // owned from here on
    Py_XDECREF(old);
  }, py::arg("callback"));
  m.def("device_allocator_active",
        []() { return g_device_allocator != nullptr && c10::GetAllocator(DeviceType::PrivateUse1) == g_device_allocator; });
  m.def("pinned_blocks", []() { return static_cast<int64_t>(g_pinned_blocks.load()); });
  m.def("hf32_round_into", &hf32_round_into, py::arg("src"), py::arg("dst"), py::arg("n"),
        py::call_guard<py::gil_scoped_release>());
  m.def("built_for_torch", []() {
    return std::to_string(TORCH_VERSION_MAJOR) + "." +
        std::to_string(TORCH_VERSION_MINOR) + "." +
        std::to_string(TORCH_VERSION_PATCH);
  });
}
