// Text and token ids (include/llmrt/text/): the byte-level map, UTF-8 held back while streaming,
// and llama.cpp's own tokenizer vectors for three real vocabularies (tests/data/vocab): their ids
// must come back to the texts they were made from, and the texts must give those ids.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/vocab.hpp>
#include <llmrt/text/detokenizer.hpp>
#include <llmrt/text/bpe_tokenizer.hpp>
#include <llmrt/text/spm_tokenizer.hpp>
#include <llmrt/text/tokenizer.hpp>

using namespace llmrt;

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct vocab_case {
    sample::vocabulary vocab;
    std::vector<std::string> texts;
    std::vector<std::vector<int32_t>> ids;
};

// A vocabulary file with its texts (.inp) and llama.cpp's ids for them (.out).
vocab_case load_case_at(const std::string& base) {
    const gguf::file f = gguf::file::open(base);
    vocab_case c;
    c.vocab = model::read_vocabulary(f.metadata());
    REQUIRE(c.vocab.token_text.size() == std::size_t(c.vocab.size));
    const std::string inp = read_file(base + ".inp"), separator = "\n__ggml_vocab_test__\n";
    for (std::size_t at = 0; at < inp.size();) {
        const std::size_t end = inp.find(separator, at);
        REQUIRE(end != std::string::npos);
        c.texts.push_back(inp.substr(at, end - at));
        at = end + separator.size();
    }
    std::istringstream out(read_file(base + ".out"));
    for (std::string line; std::getline(out, line);) {
        std::istringstream numbers(line);
        std::vector<int32_t> ids;
        for (int32_t id; numbers >> id;) ids.push_back(id);
        c.ids.push_back(ids);
    }
    REQUIRE(c.texts.size() == c.ids.size());
    return c;
}

// One of tests/data/vocab.
vocab_case load_case(const std::string& name) {
    return load_case_at(std::string(LLMRT_SOURCE_DIR) + "/tests/data/vocab/ggml-vocab-" + name + ".gguf");
}

}  // namespace

TEST_CASE("the byte-level map writes every byte as GPT-2's character and reads it back") {
    CHECK(text::byte_level_char(' ') == 0x120);   // Ġ
    CHECK(text::byte_level_char('\n') == 0x10A);  // Ċ
    CHECK(text::byte_level_char('a') == 'a');
    CHECK(text::byte_level_char(0xAD) == 0x143);  // the last of the 68 moved bytes
    std::string all;
    for (int b = 0; b < 256; ++b) all += char(b);
    const std::string encoded = text::byte_level_encode(all);
    CHECK(text::byte_level_decode(encoded) == all);
    CHECK(text::byte_level_decode("\xC4\xA0hello\xC4\x8A") == " hello\n");
    CHECK(text::byte_level_decode("\xE2\x82\xAC") == "\xE2\x82\xAC");  // outside the map: kept as it is
}

TEST_CASE("UTF-8 decoding takes valid characters whole and malformed bytes one at a time") {
    const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xC3(\xED\xA0\x80";
    std::vector<uint32_t> values;
    std::vector<bool> valid;
    for (std::size_t i = 0; i < s.size();) {
        const text::code_point c = text::decode_utf8(s, i);
        values.push_back(c.value);
        valid.push_back(c.valid);
        i += c.bytes;
    }
    CHECK(values == std::vector<uint32_t>{'a', 0xE9, 0x20AC, 0x1F600, 0xC3, '(', 0xED, 0xA0, 0x80});
    CHECK(valid == std::vector<bool>{true, true, true, true, false, true, false, false, false});
    std::string round;
    for (uint32_t v : {0x41u, 0xE9u, 0x20ACu, 0x1F600u}) text::append_utf8(round, v);
    CHECK(round == "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

TEST_CASE("a stream of pieces gives whole characters only, holding back one split between pieces") {
    text::utf8_stream out;
    CHECK(out.push("caf") == "caf");
    CHECK(out.push("\xC3") == "");  // é's first byte
    CHECK(out.held_back() == 1);
    CHECK(out.push("\xA9 \xF0\x9F") == "\xC3\xA9 ");
    CHECK(out.push("\x98") == "");
    CHECK(out.push("\x80!") == "\xF0\x9F\x98\x80!");
    CHECK(out.push("\xFF") == "\xFF");  // never valid: not held back
    CHECK(out.push("\xE2\x82") == "");
    CHECK(out.flush() == "\xE2\x82");  // what is left at the end is given as it is
}

TEST_CASE("llama.cpp's ids come back to their texts for the Llama 3, Qwen2 and Llama 2 vocabularies") {
    for (const char* name : {"llama-bpe", "qwen2", "llama-spm"}) {
        CAPTURE(name);
        const vocab_case c = load_case(name);
        const text::detokenizer d(c.vocab);
        CHECK(c.texts.size() > 30);
        for (std::size_t i = 0; i < c.texts.size(); ++i) {
            CAPTURE(c.texts[i]);
            CHECK(d.text(c.ids[i]) == c.texts[i]);
            // Streamed piece by piece, the same text arrives, in whole characters.
            text::utf8_stream out;
            std::string streamed;
            for (int32_t id : c.ids[i]) streamed += out.push(d.piece(id));
            streamed += out.flush();
            std::string joined;
            for (int32_t id : c.ids[i]) joined += d.piece(id);
            CHECK(streamed == joined);
        }
    }
}

TEST_CASE("a vocabulary's special tokens: control ones give no text unless asked, and end generation") {
    const vocab_case llama3 = load_case("llama-bpe");
    const sample::vocabulary& v = llama3.vocab;
    const text::detokenizer d(v);
    CHECK(d.kind() == text::detokenizer::family::byte_level);
    CHECK(v.bos == 128000);
    CHECK(v.add_bos);
    CHECK_FALSE(v.add_space_prefix);
    CHECK(d.type(128000) == text::token_kind::control);
    CHECK(d.piece(128000).empty());
    CHECK(d.piece(128000, true) == "<|begin_of_text|>");
    CHECK(v.ends_generation(128001));                // <|end_of_text|>, the eos
    CHECK(v.token_text[std::size_t(v.eot)] == "<|eot_id|>");  // found by its text: the file names none
    CHECK(v.ends_generation(v.eot));
    CHECK_FALSE(v.ends_generation(128000));
    CHECK_THROWS_AS((void)d.piece(int32_t(v.token_text.size())), llmrt::error);
    CHECK_THROWS_AS((void)d.piece(-1), llmrt::error);

    const vocab_case llama2 = load_case("llama-spm");
    const text::detokenizer spm(llama2.vocab);
    CHECK(spm.kind() == text::detokenizer::family::sentencepiece);
    CHECK(llama2.vocab.add_space_prefix);
    CHECK(spm.type(3 + 0x0A) == text::token_kind::byte);
    CHECK(spm.piece(3 + 0x0A) == "\n");  // <0x0A>
    CHECK(spm.piece(1).empty());          // <s>
}

TEST_CASE("the SentencePiece tokenizer gives llama.cpp's ids for the Llama 2 vocabulary's texts") {
    const std::string path = std::string(LLMRT_SOURCE_DIR) + "/tests/data/vocab/ggml-vocab-llama-spm.gguf";
    const gguf::file f = gguf::file::open(path);
    const vocab_case c = load_case("llama-spm");
    const text::spm_tokenizer t = model::spm_tokenizer_of(f.metadata(), c.vocab);
    for (std::size_t i = 0; i < c.texts.size(); ++i) {
        CAPTURE(c.texts[i]);
        CHECK(t.encode(c.texts[i]) == c.ids[i]);
    }
    // Byte fallback: a character the vocabulary lacks becomes its UTF-8 bytes' byte tokens.
    CHECK(t.encode("\xF0\x9F\xA6\x99") == std::vector<int32_t>{29871, 3 + 0xF0, 3 + 0x9F, 3 + 0xA6, 3 + 0x99});
    CHECK(text::detokenizer(c.vocab).text(t.encode("llamas \xF0\x9F\xA6\x99 eat grass")) == "llamas \xF0\x9F\xA6\x99 eat grass");
}

TEST_CASE("the byte-level BPE tokenizer gives llama.cpp's ids for the Llama 3 and Qwen2 vocabularies' texts") {
    for (const char* name : {"llama-bpe", "qwen2"}) {
        CAPTURE(name);
        const gguf::file f = gguf::file::open(std::string(LLMRT_SOURCE_DIR) + "/tests/data/vocab/ggml-vocab-" + name + ".gguf");
        const vocab_case c = load_case(name);
        const text::bpe_tokenizer t = model::bpe_tokenizer_of(f.metadata(), c.vocab);
        for (std::size_t i = 0; i < c.texts.size(); ++i) {
            CAPTURE(c.texts[i]);
            CHECK(t.encode(c.texts[i]) == c.ids[i]);
        }
    }
}

TEST_CASE("a prompt starts with bos where the vocabulary says so, and parses special tokens on request") {
    const std::string dir = std::string(LLMRT_SOURCE_DIR) + "/tests/data/vocab/ggml-vocab-";
    const gguf::file llama3_file = gguf::file::open(dir + "llama-bpe.gguf");
    const vocab_case llama3 = load_case("llama-bpe");
    const text::tokenizer t = model::tokenizer_of(llama3_file.metadata(), llama3.vocab);
    const std::vector<int32_t> hello = t.encode("Hello", {.add_bos = false});
    REQUIRE(hello.size() == 1);
    CHECK(t.encode("Hello") == std::vector<int32_t>{128000, hello[0]});
    // <|eot_id|> as text is text; parsed, it is the one token.
    const std::vector<int32_t> as_text = t.encode("Hello<|eot_id|>", {.add_bos = false});
    CHECK(as_text.size() > 2);
    CHECK(t.encode("Hello<|eot_id|>", {.add_bos = false, .parse_special = true}) == std::vector<int32_t>{hello[0], llama3.vocab.eot});
    CHECK(text::detokenizer(llama3.vocab).text(t.encode("<|begin_of_text|>Hi", {.parse_special = true}), true) ==
          "<|begin_of_text|><|begin_of_text|>Hi");

    const gguf::file llama2_file = gguf::file::open(dir + "llama-spm.gguf");
    const vocab_case llama2 = load_case("llama-spm");
    const text::tokenizer spm = model::tokenizer_of(llama2_file.metadata(), llama2.vocab);
    CHECK(spm.encode("Hello world").front() == 1);  // <s>
    CHECK(spm.encode("") == std::vector<int32_t>{1});
    CHECK(spm.encode("", {.add_bos = false}).empty());
    // After a special token the text gets SentencePiece's space again.
    CHECK(spm.encode("</s>Hello", {.add_bos = false, .parse_special = true}) ==
          std::vector<int32_t>{2, spm.encode("Hello", {.add_bos = false})[0]});
}

TEST_CASE("with LLMRT_LLAMA_CPP_MODELS set, every vocabulary of llama.cpp's models folder llmrt supports passes both ways") {
    // llama.cpp's models/ folder (the llama-cpp-python sdist carries it) holds more vocabularies
    // than tests/data/vocab; they are large, so they are read from where the sdist was unpacked.
    const char* dir = std::getenv("LLMRT_LLAMA_CPP_MODELS");
    if (dir == nullptr) {
        MESSAGE("LLMRT_LLAMA_CPP_MODELS is not set: only tests/data/vocab is checked");
        return;
    }
    int checked = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string path = entry.path().string();
        if (entry.path().extension() != ".gguf" || !std::filesystem::exists(path + ".inp")) continue;
        const gguf::file f = gguf::file::open(path);
        const std::string kind = f.metadata().get_or<std::string>("tokenizer.ggml.model", "");
        const std::string pre = f.metadata().get_or<std::string>("tokenizer.ggml.pre", "default");
        bool supported = kind == "llama";
        if (kind == "gpt2") {
            try {
                (void)text::pre_tokenizer_named(pre);
                supported = true;
            } catch (const llmrt::error&) {
            }
        }
        if (!supported) {
            MESSAGE("not supported, left out: " << path << " (" << kind << ", " << pre << ")");
            continue;
        }
        CAPTURE(path);
        const vocab_case c = load_case_at(path);
        const text::tokenizer t = model::tokenizer_of(f.metadata(), c.vocab);
        const text::detokenizer d(c.vocab);
        for (std::size_t i = 0; i < c.texts.size(); ++i) {
            CAPTURE(c.texts[i]);
            CHECK(t.encode(c.texts[i], {.add_bos = false}) == c.ids[i]);
            CHECK(d.text(c.ids[i]) == c.texts[i]);
        }
        ++checked;
    }
    CHECK(checked > 0);
}
