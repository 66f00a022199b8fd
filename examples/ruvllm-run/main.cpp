// ruvllm-run: generate text from a GGUF model made for llama.cpp.
//
//   ruvllm-run --model PATH [--prompt TEXT] [-n N] [--threads T]
//              [--temp X] [--top-k K] [--top-p P] [--min-p P]
//              [--repeat-penalty X] [--repeat-last-n N] [--seed S]
//              [--ctx N] [--stop TEXT]... [--chat] [--chat-template NAME]
//
// Streams the continuation to stdout as it is generated and prints prompt
// and generation speed to stderr at the end. --chat wraps the prompt as one
// user turn in the model's chat template (tokenizer.chat_template, or NAME:
// llama2, llama3, chatml, mistral).

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <thread>
#include <vector>

#include "ruvllm/ruvllm.hpp"

namespace {

struct arguments {
  std::string model;
  std::string prompt = "Once upon a time";
  std::size_t n_predict = 64;
  std::size_t threads = 0;
  std::size_t n_ctx = 0;
  std::vector<std::string> stops;
  bool chat = false;
  std::string chat_template;
  ruvllm::model::sampler_params sampling;
};

void usage(std::FILE* out) {
  std::fputs(
      "usage: ruvllm-run --model PATH [--prompt TEXT] [-n N] [--threads T] [--ctx N]\n"
      "                  [--temp X] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty X]\n"
      "                  [--repeat-last-n N] [--seed S] [--stop TEXT]... [--chat] [--chat-template NAME]\n",
      out);
}

template <class T>
bool parse_number(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

/// Parses argv; prints the problem and returns false on bad input.
bool parse(int argc, char** argv, arguments& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      usage(stdout);
      std::exit(0);
    }
    if (flag == "--chat") {
      a.chat = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "ruvllm-run: %s needs a value\n", argv[i]);
      return false;
    }
    const std::string_view value = argv[++i];
    bool ok = true;
    if (flag == "--model" || flag == "-m")
      a.model = value;
    else if (flag == "--prompt" || flag == "-p")
      a.prompt = value;
    else if (flag == "--stop")
      a.stops.emplace_back(value);
    else if (flag == "--chat-template") {
      a.chat_template = value;
      a.chat = true;
    } else if (flag == "-n" || flag == "--n-predict")
      ok = parse_number(value, a.n_predict);
    else if (flag == "--threads" || flag == "-t")
      ok = parse_number(value, a.threads);
    else if (flag == "--ctx" || flag == "-c")
      ok = parse_number(value, a.n_ctx);
    else if (flag == "--temp")
      ok = parse_number(value, a.sampling.temperature);
    else if (flag == "--top-k")
      ok = parse_number(value, a.sampling.top_k);
    else if (flag == "--top-p")
      ok = parse_number(value, a.sampling.top_p);
    else if (flag == "--min-p")
      ok = parse_number(value, a.sampling.min_p);
    else if (flag == "--repeat-penalty")
      ok = parse_number(value, a.sampling.repeat_penalty);
    else if (flag == "--repeat-last-n")
      ok = parse_number(value, a.sampling.penalty_last_n);
    else if (flag == "--seed")
      ok = parse_number(value, a.sampling.seed);
    else {
      std::fprintf(stderr, "ruvllm-run: unknown option %s\n", argv[i - 1]);
      usage(stderr);
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "ruvllm-run: %s: '%s' is not a valid number\n", argv[i - 1], argv[i]);
      return false;
    }
  }
  if (a.threads > ruvllm::thread_pool::max_threads) {
    std::fprintf(stderr, "ruvllm-run: --threads %zu exceeds the pool's limit of %zu\n", a.threads,
                 ruvllm::thread_pool::max_threads);
    return false;
  }
  if (a.model.empty()) {
    std::fputs("ruvllm-run: --model PATH is required\n", stderr);
    usage(stderr);
    return false;
  }
  return true;
}

/// Reads every page of a large mapping ahead of use, with progress on
/// stderr, so the first tokens are not slowed by page faults.
void prefault(std::span<const std::byte> bytes) {
  constexpr std::size_t large = std::size_t{256} << 20;
  if (bytes.size() < large) return;
  ::madvise(const_cast<std::byte*>(bytes.data()), bytes.size(), MADV_WILLNEED);
  const std::size_t page = 4096, step = bytes.size() / 20;
  volatile std::byte sink{};
  std::size_t next = step;
  for (std::size_t off = 0; off < bytes.size(); off += page) {
    sink = bytes[off];
    if (off >= next) {
      std::fprintf(stderr, "\rloading %3zu%%", off * 100 / bytes.size());
      next += step;
    }
  }
  (void)sink;
  std::fputs("\rloading 100%\n", stderr);
}

int fail(const ruvllm::error& e) {
  std::fprintf(stderr, "ruvllm-run: %s\n", e.describe().c_str());
  return 1;
}

/// " with AVX-VNNI" when the kernels run the AVX2 target with its AVX-VNNI
/// quant kernels, which Highway's target name does not say.
const char* avx_vnni_note() {
  const std::string_view target = ruvllm::backend::highway::target_name();
  return target == "AVX2" && ruvllm::kernels::avx_vnni_in_use() ? " with AVX-VNNI" : "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ruvllm::model;
  arguments args;
  if (!parse(argc, argv, args)) return 2;

  auto model = llama_model::open(args.model);
  if (!model) return fail(model.error());
  prefault(model->file().bytes());
  auto tok = tokenizer::from_gguf(model->file());
  if (!tok) return fail(tok.error());
  const llama_hparams& h = model->hparams();
  if (auto fits = tok->check_model_vocab(h.n_vocab); !fits) return fail(fits.error());
  std::fprintf(stderr, "model: %s, %zu layers, %zu heads (%zu KV), dim %zu, vocab %zu, context %zu\n",
               h.architecture.c_str(), h.n_layer, h.n_head, h.n_head_kv, h.n_embd, h.n_vocab, h.n_ctx_train);

  std::string text = args.prompt;
  bool parse_special = false;
  if (args.chat) {
    auto tmpl =
        args.chat_template.empty() ? detect_chat_template(model->file()) : chat_template_from_name(args.chat_template);
    if (!tmpl) return fail(tmpl.error());
    const chat_message turn{"user", args.prompt};
    text = apply_chat_template(*tmpl, std::span(&turn, 1), true);
    parse_special = true;
  }
  const std::vector<token_id> prompt = tok->encode(text, true, parse_special);
  if (prompt.empty()) {
    std::fputs("ruvllm-run: the prompt is empty after tokenization\n", stderr);
    return 2;
  }

  const std::size_t threads = args.threads != 0 ? args.threads
                                                : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1,
                                                                          ruvllm::thread_pool::max_threads);
  ruvllm::thread_pool pool(threads);
  llama_context<>::options copt;
  copt.n_ctx = args.n_ctx != 0 ? args.n_ctx : std::min<std::size_t>(h.n_ctx_train, 4096);
  auto ctx = llama_context<>::create(*model, pool, copt);
  if (!ctx) return fail(ctx.error());
  auto smp = sampler::create(args.sampling, h.n_vocab);
  if (!smp) return fail(smp.error());

  std::vector<token_id> stop_tokens = {tok->eos()};
  for (const std::string_view end : {"<|eot_id|>", "<|im_end|>", "<|end_of_text|>"})
    if (const token_id id = tok->find(end); id >= 0) stop_tokens.push_back(id);
  generate_options gopt;
  gopt.max_tokens = args.n_predict;
  gopt.stop_tokens = stop_tokens;

  std::fputs(args.prompt.c_str(), stdout);
  std::fflush(stdout);
  stream_detokenizer detok(*tok);
  stop_sequence_matcher stops(args.stops);
  std::string piece;
  std::vector<token_id> cached;
  auto stats = generate(*ctx, *smp, prompt, cached, gopt, [&](token_id id) {
    piece.clear();
    if (!detok.push(id, piece)) return false;
    const std::string shown = stops.feed(piece);
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    std::fflush(stdout);
    return !stops.stopped();
  });
  if (!stats) return fail(stats.error());
  piece.clear();
  detok.finish(piece);
  const std::string rest = stops.feed(piece) + stops.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputs("\n", stdout);
  std::fprintf(stderr,
               "\nprompt: %zu tokens (%zu reused) at %.1f tokens/s; generation: %zu tokens at %.1f tokens/s (%s); %zu "
               "threads, kernels: %s%s\n",
               stats->prompt_tokens, stats->reused_tokens, stats->prompt_tokens_per_second(), stats->generated_tokens,
               stats->generation_tokens_per_second(), std::string(to_string(stats->reason)).c_str(), threads,
               ruvllm::backend::highway::target_name(), avx_vnni_note());
  return 0;
}
