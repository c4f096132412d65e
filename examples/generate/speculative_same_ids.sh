#!/bin/sh
# ctest example_generate_speculative_same_ids: llmrt-generate --draft (a Q4_0 copy of a Q8_0 random
# model's weights) and --ngram give the ids of plain decoding, greedy and sampled, with draft tokens
# accepted when greedy (a random model's flat distribution rarely samples the draft's pick); a draft model of another vocabulary is refused with both sizes named.
#   sh speculative_same_ids.sh LLMRT_GENERATE
set -u
g=$1
m="--embd 128 --heads 8 --kv-heads 4 --ff 256 --ctx 128"
"$g" --make-model st.gguf --type q8_0 $m --vocab 301 > /dev/null &&
    "$g" --make-model sd.gguf --type q4_0 $m --vocab 301 > /dev/null &&
    "$g" --make-model sv.gguf --type q8_0 $m --vocab 300 > /dev/null || exit 1
for t in 0 0.8; do
    plain=$("$g" st.gguf --backend cpu -n 40 --temp $t | grep '^output:')
    drafted=$("$g" st.gguf --backend cpu -n 40 --temp $t --draft sd.gguf --p-min 0)
    both=$("$g" st.gguf --backend cpu -n 40 --temp $t --draft sd.gguf --p-min 0 --ngram --no-overlap | grep '^output:')
    echo "temp $t: $plain"
    echo "$drafted" | grep '^drafts:'
    [ -n "$plain" ] || exit 1
    [ "$plain" = "$(echo "$drafted" | grep '^output:')" ] || { echo "--draft parted from plain decoding"; exit 1; }
    [ "$plain" = "$both" ] || { echo "--draft --ngram --no-overlap parted from plain decoding"; exit 1; }
    if [ $t = 0 ]; then
        echo "$drafted" | grep -q '^drafts: .* [1-9][0-9]* of [0-9]* draft tokens accepted' || { echo "no draft token accepted"; exit 1; }
    fi
done
"$g" st.gguf -n 4 --draft sv.gguf 2>&1 | grep -q "draft vocabulary has 300 tokens, the target's has 301" ||
    { echo "a draft of another vocabulary was not refused"; exit 1; }
