"""tkipf/gcn's GCN (gcn/models.py) trained for a few epochs on a small random graph, on the
CPU, seeded: the loss must be finite and fall. Run from the repository's root under its
environment's Python (3.7, TensorFlow 1.15)."""
from __future__ import print_function

import os
import sys

import numpy as np
import scipy.sparse as sp
import tensorflow as tf

sys.path.insert(0, os.getcwd())
from gcn.models import GCN
from gcn.utils import construct_feed_dict, preprocess_adj, preprocess_features

NODES, FEATURES, CLASSES, EPOCHS = 60, 20, 3, 30

flags = tf.app.flags
flags.DEFINE_float('learning_rate', 0.01, '')
flags.DEFINE_integer('hidden1', 16, '')
flags.DEFINE_float('dropout', 0.0, '')
flags.DEFINE_float('weight_decay', 5e-4, '')

np.random.seed(0)
tf.set_random_seed(0)
upper = sp.random(NODES, NODES, density=0.1, format='csr', random_state=0)
adj = ((upper + upper.T) > 0).astype(np.float32)
features = preprocess_features(sp.lil_matrix((np.random.rand(NODES, FEATURES) > 0.7) * 1.0))
support = [preprocess_adj(adj)]
labels = np.eye(CLASSES, dtype=np.float32)[np.random.randint(CLASSES, size=NODES)]
mask = np.ones(NODES, dtype=bool)

placeholders = {
    'support': [tf.sparse_placeholder(tf.float32)],
    'features': tf.sparse_placeholder(tf.float32, shape=tf.constant(features[2], dtype=tf.int64)),
    'labels': tf.placeholder(tf.float32, shape=(None, CLASSES)),
    'labels_mask': tf.placeholder(tf.int32),
    'dropout': tf.placeholder_with_default(0., shape=()),
    'num_features_nonzero': tf.placeholder(tf.int32),
}
model = GCN(placeholders, input_dim=features[2][1], logging=False)
feed = construct_feed_dict(features, support, labels, mask, placeholders)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [sess.run([model.opt_op, model.loss], feed_dict=feed)[1] for _ in range(EPOCHS)]
    outputs = sess.run(model.outputs, feed_dict=feed)

assert np.all(np.isfinite(losses)), losses
assert losses[-1] < losses[0], losses
assert outputs.shape == (NODES, CLASSES), outputs.shape
print("ok loss=%.4f (from %.4f, %d epochs) outputs=%s" % (losses[-1], losses[0], EPOCHS,
                                                          outputs.shape))
