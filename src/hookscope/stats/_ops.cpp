// CPU kernels of the compiled Monitor's row ops, registered with the dispatcher in C++.
//
// `hookscope.stats.cpuops` builds this file against the installed torch's stable C shim
// (torch/csrc/stable/c/shim.h: no ATen headers, about a second to compile) and registers
// each function below as the CPU kernel of a `hookscope::` op that `rowop` and `gradrow`
// define in Python. A call from inductor's wrapper then goes dispatcher -> C++ -> the C
// kernel (`_kernel.c`, by the function pointers `hs_ops_setup` is given), with no Python
// frame in between. Each kernel takes its fast path only where the Python kernel would
// reach the same C entry (`rowop._kernel_merge`, `_kernel_affine`, `_move_row_`,
// `gradrow._grad_row_add`); anything else, including a NaN or Inf the C entry reports,
// goes to a `*_py` op whose kernel is the Python one, with the same arguments, so the
// rows are bit for bit those of the Python kernels.

#include <torch/csrc/stable/c/shim.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace {

using MergeFn = int (*)(int, const void*, int64_t, int, int, double*);
using GradAddFn = int (*)(int, const void*, int64_t, int, double*);
using AffineFn = int (*)(const float*, int64_t, int64_t, int64_t, const float*, const float*,
                         const float*, int, int, double*, double*);
using MoveFn = void (*)(double*, double*);

constexpr int64_t kFields = 9;  // FIELDS

MergeFn merge_row = nullptr;
GradAddFn grad_row_add = nullptr;
AffineFn affine_row = nullptr;
MoveFn move_row = nullptr;
// The C kernel's dtype codes for float32, bfloat16, float16, float64 (-1: not built).
int codes[4] = {-1, -1, -1, -1};
int32_t dtypes[4] = {0, 0, 0, 0};  // the shim's codes of the same dtypes
int32_t float32 = 0, float64 = 0, cpu = 0;
// Fast paths on (cpuops.set_enabled, and the C kernel not turned off in native).
std::atomic<bool> on{false};

struct Place {
  double* row0;
  int64_t stride;  // in doubles
  int64_t rows;
};
std::mutex places_lock;
std::unordered_map<int64_t, Place> places;  // gradrow keys -> float64 CPU buffers

TorchLibraryHandle library = nullptr;

AtenTensorHandle tensor(StableIValue v) { return reinterpret_cast<AtenTensorHandle>(v); }
int64_t integer(StableIValue v) { return static_cast<int64_t>(v); }
bool flag(StableIValue v) { return (v & 0xff) != 0; }

void release(StableIValue* stack, std::initializer_list<int> at) {
  for (int i : at) aoti_torch_delete_tensor_object(tensor(stack[i]));
}

std::atomic<int64_t> fallbacks{0};  // calls handed to the Python kernels

// Hand the whole stack (its tensors included) to the op's Python kernel.
void fall_back(const char* op, StableIValue* stack) {
  fallbacks.fetch_add(1, std::memory_order_relaxed);
  if (torch_call_dispatcher(op, "", stack, TORCH_ABI_VERSION) != AOTI_TORCH_SUCCESS)
    throw std::runtime_error(torch_exception_get_what_without_backtrace());
}

// What the C kernel needs of a tensor: a dense CPU tensor of a dtype it reduces.
struct View {
  void* data = nullptr;
  int64_t numel = 0, dim = 0;
  int64_t* sizes = nullptr;
  int64_t* strides = nullptr;
  int32_t dtype = -1;
  int code = -1;  // the C kernel's dtype code, -1: not one it reduces
};

bool cpu_view(AtenTensorHandle t, View* v) {
  int32_t device = -1, layout = -1;
  if (aoti_torch_get_device_type(t, &device) || device != cpu) return false;
  if (aoti_torch_get_layout(t, &layout) || layout != aoti_torch_layout_strided()) return false;
  if (aoti_torch_get_dtype(t, &v->dtype) || aoti_torch_get_numel(t, &v->numel) ||
      aoti_torch_get_dim(t, &v->dim) || aoti_torch_get_sizes(t, &v->sizes) ||
      aoti_torch_get_strides(t, &v->strides) || aoti_torch_get_data_ptr(t, &v->data))
    return false;
  for (int k = 0; k < 4; k++)
    if (v->dtype == dtypes[k]) v->code = codes[k];
  return true;
}

// native._dense: the elements fill one block of memory in some order (dims of size 1 aside).
bool dense(const View& v) {
  std::pair<int64_t, int64_t> dims[16];
  int64_t n = 0;
  if (v.dim > 16) return false;
  for (int64_t k = 0; k < v.dim; k++)
    if (v.sizes[k] != 1) dims[n++] = {v.strides[k], v.sizes[k]};
  std::sort(dims, dims + n);
  int64_t expected = 1;
  for (int64_t k = 0; k < n; k++) {
    if (dims[k].first != expected) return false;
    expected *= dims[k].second;
  }
  return true;
}

// A tensor the C kernel reduces (native.takes), not empty.
bool reducible(AtenTensorHandle t, View* v) {
  return cpu_view(t, v) && v->code >= 0 && v->numel > 0 && dense(*v);
}

// The `(rows, 9)` float64 CPU buffer's row `index` (rowop._row_address), or null.
double* row_of(AtenTensorHandle rows, int64_t index) {
  View v;
  bool contiguous = false;
  if (!cpu_view(rows, &v) || v.dtype != float64 || v.dim != 2 || v.sizes[1] != kFields)
    return nullptr;
  if (aoti_torch_is_contiguous(rows, &contiguous) || !contiguous) return nullptr;
  if (index < 0 || index >= v.sizes[0]) return nullptr;
  return static_cast<double*>(v.data) + index * v.strides[0];
}

int threads() {
  uint32_t n = 1;
  return torch_get_num_threads(&n) == AOTI_TORCH_SUCCESS ? static_cast<int>(n) : 1;
}

// merge_row_(Tensor(a!) rows, int index, Tensor x, bool squares, bool extrema, bool zeros,
//            bool relu=False) -> ()
void merge_row_kernel(StableIValue* stack, uint64_t, uint64_t) {
  if (on) {
    double* row = row_of(tensor(stack[0]), integer(stack[1]));
    View x;
    bool relu = flag(stack[6]);
    if (row != nullptr && cpu_view(tensor(stack[2]), &x) && x.numel == 0) {
      row[0] += 1.0;  // only the call counts
      return release(stack, {0, 2});
    }
    if (row != nullptr && reducible(tensor(stack[2]), &x) && (!relu || x.dtype == float32) &&
        merge_row(x.code, x.data, x.numel, threads(), relu, row) == 0)
      return release(stack, {0, 2});
  }
  fall_back("hookscope::merge_row_py_", stack);
}

// affine_row_(Tensor(a!) rows, int index, Tensor x, Tensor mean, Tensor scale, Tensor bias,
//             bool squares, bool extrema, bool zeros, int relu_index=-1) -> ()
void affine_row_kernel(StableIValue* stack, uint64_t, uint64_t) {
  if (on) {
    double* row = row_of(tensor(stack[0]), integer(stack[1]));
    int64_t relu_index = integer(stack[9]);
    bool relu = relu_index >= 0;
    double* spare = relu ? row_of(tensor(stack[0]), relu_index) : nullptr;
    View x;
    bool ok = row != nullptr && (!relu || (spare != nullptr && spare != row)) &&
              reducible(tensor(stack[2]), &x) && x.dtype == float32 && x.dim >= 2;
    const float* params[3] = {nullptr, nullptr, nullptr};
    for (int k = 0; ok && k < 3; k++) {
      View p;
      bool contiguous = false;
      ok = cpu_view(tensor(stack[3 + k]), &p) && p.dtype == float32 && p.numel == x.sizes[1] &&
           aoti_torch_is_contiguous(tensor(stack[3 + k]), &contiguous) == 0 && contiguous;
      params[k] = static_cast<const float*>(p.data);
    }
    if (ok) {
      int64_t channels = x.sizes[1];
      int64_t stride = channels > 1 ? x.strides[1] : 1;  // a size-1 dim's stride may be anything
      if (affine_row(static_cast<const float*>(x.data), x.numel, stride, channels, params[0],
                     params[1], params[2], relu, threads(), row, relu ? spare : nullptr) == 0)
        return release(stack, {0, 2, 3, 4, 5});
    }
  }
  fall_back("hookscope::affine_row_py_", stack);
}

// move_row_(Tensor(a!) rows, int source, int index) -> ()
void move_row_kernel(StableIValue* stack, uint64_t, uint64_t) {
  if (on) {
    double* source = row_of(tensor(stack[0]), integer(stack[1]));
    double* to = row_of(tensor(stack[0]), integer(stack[2]));
    if (source != nullptr && to != nullptr && source != to) {
      move_row(source, to);
      return release(stack, {0});
    }
  }
  fall_back("hookscope::move_row_py_", stack);
}

// grad_row_add(Tensor g, int key, int index) -> ()
void grad_row_add_kernel(StableIValue* stack, uint64_t, uint64_t) {
  if (on) {
    View g;
    if (cpu_view(tensor(stack[0]), &g) && g.numel == 0) return release(stack, {0});
    double* row = nullptr;
    {
      std::lock_guard<std::mutex> hold(places_lock);
      auto found = places.find(integer(stack[1]));
      int64_t index = integer(stack[2]);
      if (found != places.end() && index >= 0 && index < found->second.rows)
        row = found->second.row0 + index * found->second.stride;
    }
    if (row != nullptr && reducible(tensor(stack[0]), &g) &&
        grad_row_add(g.code, g.data, g.numel, threads(), row) == 0)
      return release(stack, {0});
  }
  fall_back("hookscope::grad_row_add_py", stack);
}

}  // namespace

extern "C" {

// The C kernel's entries and its dtype codes (float32, bfloat16, float16, float64; -1: none).
void hs_ops_setup(void* merge, void* grad_add, void* affine, void* move, const int* kernel_codes) {
  merge_row = reinterpret_cast<MergeFn>(merge);
  grad_row_add = reinterpret_cast<GradAddFn>(grad_add);
  affine_row = reinterpret_cast<AffineFn>(affine);
  move_row = reinterpret_cast<MoveFn>(move);
  for (int k = 0; k < 4; k++) codes[k] = kernel_codes[k];
  dtypes[0] = float32 = aoti_torch_dtype_float32();
  dtypes[1] = aoti_torch_dtype_bfloat16();
  dtypes[2] = aoti_torch_dtype_float16();
  dtypes[3] = float64 = aoti_torch_dtype_float64();
  cpu = aoti_torch_device_type_cpu();
}

// Register the four kernels for the CPU (once); 0 on success, else the step that failed.
int hs_ops_register(void) {
  if (library != nullptr) return 0;
  if (merge_row == nullptr) return 1;
  TorchLibraryHandle lib = nullptr;
  if (aoti_torch_library_init_impl("hookscope", "CPU", __FILE__, __LINE__, &lib)) return 2;
  const std::pair<const char*, void (*)(StableIValue*, uint64_t, uint64_t)> kernels[] = {
      {"merge_row_", merge_row_kernel},
      {"affine_row_", affine_row_kernel},
      {"move_row_", move_row_kernel},
      {"grad_row_add", grad_row_add_kernel},
  };
  for (const auto& [name, fn] : kernels) {
    if (torch_library_impl(lib, name, fn, TORCH_ABI_VERSION)) {
      aoti_torch_delete_library_object(lib);  // takes back what was registered
      return 3;
    }
  }
  library = lib;  // kept for the process: deleting it would take the kernels back
  return 0;
}

void hs_ops_set_on(int value) { on = value != 0; }

int64_t hs_ops_fallbacks(void) { return fallbacks.load(std::memory_order_relaxed); }

// gradrow.register / unregister: where key's rows are (a float64 CPU buffer).
void hs_ops_set_buffer(int64_t key, int64_t address, int64_t stride, int64_t rows) {
  std::lock_guard<std::mutex> hold(places_lock);
  places[key] = Place{reinterpret_cast<double*>(address), stride, rows};
}

void hs_ops_clear_buffer(int64_t key) {
  std::lock_guard<std::mutex> hold(places_lock);
  places.erase(key);
}

}  // extern "C"
