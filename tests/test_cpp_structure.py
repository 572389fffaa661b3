"""C and C++ structure (verifier/code/_cpp.py, #30): the definitions of a file by dotted symbol, on code shaped like
llama.cpp's (`common/common.h`'s parameter struct, `common/arg.cpp`'s option table, `tools/server/server.cpp`'s
methods defined outside their class), and what is not a definition."""

from __future__ import annotations

import pytest

from verifier.code import _cpp

SOURCE = b'''#include "arg.h"
// the parameters, with their defaults
struct common_params {
    int32_t n_predict = -1; // new tokens to predict
    int32_t n_ctx     = 4096;
    bool flash_attn = false;
    std::string model = ""; // NOLINT
    std::vector<std::string> antiprompt;
    struct common_params_sampling sampling;
    enum llama_pooling_type pooling_type = LLAMA_POOLING_TYPE_UNSPECIFIED;
    float rope_freq_base{0.0f};
    int32_t * ptr = nullptr;
    int32_t ids[4] = {0, 1, 2, 3};
    void reset();
};
struct forward_only;
int prototype(int x);
extern int declared_elsewhere;
namespace {
static void helper() { int local = 1; }
}
namespace ns { namespace inner { int f(int x) { return x; } } }
namespace a::b { int g() { return 0; } }
struct server_context {
    llama_model * model = nullptr;
    void update_slots();
    bool load_model(const common_params & params) { return true; }
    struct nested { int a = 1; };
    ~server_context() { }
};
void server_context::update_slots() {
    if (x) { }
}
template <typename T> static T clamp(T v) { return v; }
#ifdef GGML_USE_CUDA
static int cuda_only() { return 1; }
#else
static int cuda_only() { return 0; }
#endif
extern "C" { int c_api(void) { return 0; } }
static const std::vector<std::string> names = {"a", "b"};
static std::string * pointer_returning() { return nullptr; }
common_params_context common_params_parser_init(common_params & params, llama_example ex) {
    auto add_opt = [&](common_arg arg) { ctx_arg.options.push_back(std::move(arg)); };
    add_opt(common_arg(
        {"-c", "--ctx-size"}, "N",
        string_format("size of the prompt context (default: %d, 0 = loaded from model)", params.n_ctx),
        [](common_params & params, int value) {
            params.n_ctx = value;
        }
    ).set_env("LLAMA_ARG_CTX_SIZE"));
    return ctx_arg;
}
enum server_state {
    SERVER_STATE_LOADING_MODEL,  // Server is starting up, model not fully loaded yet
    SERVER_STATE_READY,          // Server is ready and model is loaded
};
typedef struct { int x = 0; } anonymous_t;
using json = nlohmann::ordered_json;
'''


@pytest.fixture(scope="module")
def found():
    tree = _cpp.parse(SOURCE)
    assert not tree.root_node.has_error
    return tree.root_node, list(_cpp.definitions(tree.root_node))


def _lines(rng) -> str:
    return SOURCE[rng[0]:rng[1]].decode()


def test_definitions_are_named_by_their_qualified_dotted_symbol(found):
    _, definitions = found
    names = [name for name, _ in definitions]
    assert names == [
        "common_params", "helper", "ns", "a.b", "server_context", "server_context.update_slots", "clamp",
        "cuda_only", "cuda_only", "c_api", "names", "pointer_returning", "common_params_parser_init",
        "server_state", "anonymous_t", "json",
        "common_params.n_predict", "common_params.n_ctx", "common_params.flash_attn", "common_params.model",
        "common_params.antiprompt", "common_params.sampling", "common_params.pooling_type",
        "common_params.rope_freq_base", "common_params.ptr", "common_params.ids",
        "ns.inner", "a.b.g",
        "server_context.model", "server_context.load_model", "server_context.nested", "server_context.~server_context",
        "server_state.SERVER_STATE_LOADING_MODEL", "server_state.SERVER_STATE_READY",
        "ns.inner.f", "server_context.nested.a"]
    # not definitions: a forward declaration, a prototype, `extern`, a method declared in its class (its
    # definition outside is), a lambda, a local, a parameter
    assert "common_params.reset" not in names
    for name in ("forward_only", "prototype", "declared_elsewhere", "add_opt", "local", "value", "params", "arg"):
        assert not [n for n in names if n == name or n.endswith("." + name)], name


def test_a_symbol_resolves_to_its_definitions_dotted_or_with_colons(found):
    root, definitions = found
    (field,) = _cpp.resolve(root, "common_params.n_ctx", definitions)
    assert _lines(field) == "int32_t n_ctx     = 4096;"
    assert _cpp.resolve(root, "common_params::n_ctx") == [field]
    (method,) = _cpp.resolve(root, "server_context::update_slots")
    assert _lines(method).startswith("void server_context::update_slots() {") and _lines(method).endswith("}")
    (inline,) = _cpp.resolve(root, "server_context.load_model")
    assert "return true;" in _lines(inline)
    assert len(_cpp.resolve(root, "cuda_only")) == 2  # both branches of the #ifdef define it
    (parser_init,) = _cpp.resolve(root, "common_params_parser_init")
    assert '.set_env("LLAMA_ARG_CTX_SIZE")' in _lines(parser_init)
    assert _lines(_cpp.resolve(root, "ns.inner.f")[0]).startswith("int f(int x)")
    assert _lines(_cpp.resolve(root, "a::b::g")[0]).startswith("int g()")
    assert _lines(_cpp.resolve(root, "server_state.SERVER_STATE_READY")[0]) == "SERVER_STATE_READY"
    assert _cpp.resolve(root, "common_params.reset") == []  # declared, not defined here
    assert _cpp.resolve(root, "n_ctx") == []  # a member is named with its struct
    assert _cpp.resolve(root, "helper") and _cpp.resolve(root, "clamp") and _cpp.resolve(root, "c_api")


@pytest.mark.parametrize("path,cpp", [("tools/server/server.cpp", True), ("common/common.h", True),
                                      ("ggml/src/ggml.c", True), ("ggml/src/ggml-cuda/ggml-cuda.cu", True),
                                      ("convert_hf_to_gguf.py", False), ("CMakeLists.txt", False)])
def test_which_files_are_read_as_c_or_cpp(path, cpp):
    assert _cpp.is_cpp_path(path) is cpp
