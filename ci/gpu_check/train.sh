# ci/gpu_check.sh's `train` part (sourced by it, with its helpers and variables).
# The eager baseline must train as well as the captured modes (they are bit-identical).
timeout ${TR_T_TRAIN:-240} "$BIN/tr-train" --device cuda --model cnn --mode eager --epochs 10 --data-dir "$DATA" \
  > "$OUT/train_cnn_eager.log" 2>&1 || status=1
note "cnn on Fashion-MNIST, 10 epochs on the GPU, eager, fp32:"
tee -a "$OUT/summary.txt" < "$OUT/train_cnn_eager.log"
timeout ${TR_T_TRAIN:-240} "$BIN/tr-train" --device cuda --model cnn --amp --epochs 10 --data-dir "$DATA" \
  > "$OUT/train_cnn_full_amp.log" 2>&1 || status=1
note "cnn on Fashion-MNIST, 10 epochs on the GPU, full capture, AMP:"
tee -a "$OUT/summary.txt" < "$OUT/train_cnn_full_amp.log"
# resnet18 on Fashion-MNIST padded to 32x32, with its default recipe.
timeout ${TR_T_TRAIN:-240} "$BIN/tr-train" --device cuda --model resnet18 --amp --epochs 10 --data-dir "$DATA" \
  > "$OUT/train_resnet18_full_amp.log" 2>&1 || status=1
note "resnet18 on Fashion-MNIST (padded to 32x32), 10 epochs on the GPU, full capture, AMP:"
tee -a "$OUT/summary.txt" < "$OUT/train_resnet18_full_amp.log"
# The same 10 epochs with flips and flip-TTA (the time-to-accuracy recipe's lr 0.1).
timeout ${TR_T_TRAIN:-240} "$BIN/tr-train" --device cuda --model resnet18 --amp --epochs 10 --lr 0.1 --flip \
  --tta flip --data-dir "$DATA" > "$OUT/train_resnet18_flip_tta.log" 2>&1 || status=1
note "resnet18, 10 epochs, flips and flip-TTA, lr 0.1:"
tee -a "$OUT/summary.txt" < "$OUT/train_resnet18_flip_tta.log"
